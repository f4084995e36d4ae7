--[[
ratelockr concurrency — one atomic in-flight decision: a lease, or a denial.

A request in flight holds a lease: a member of a sorted set whose score is the lease's expiry. A
request is admitted when fewer than `limit` leases are live (expiry > now), and then takes one
lease, whatever its cost. The caller gives it back when the request ends (lease.lua, "release"),
or renews it for a long request (lease.lua, "renew"); a caller that dies never releases, and its
lease frees itself `lease_ms` after it was taken or last renewed. Redis runs a script on one
thread, so counting and leasing cannot interleave with another client's call.

KEYS
  [1] the leases: a sorted set, member = lease id, score = the lease's expiry (ms since epoch)
  [2] optional: the telemetry counter of allowed decisions (INCR'd when allowed)
  [3] optional: the telemetry counter of denied decisions (INCR'd when denied)
      KEYS[2] and KEYS[3] go together; give both or neither.

ARGV
  [1] limit        integer >= 1      leases live at once
  [2] lease_ms     integer >= 1      how long a lease lives unreleased (and unrenewed)
  [3] now_ms       integer ms or ""  milliseconds since the epoch; "" = the Redis server's clock
  [4] lease id     string            the request's unique id, the member it leases under: the
                                     engine sends 16 random URL-safe characters (96 bits). The
                                     caller keeps it to release or renew the lease.
  [5] cost         integer >= 0      optional, default 1; any cost >= 1 takes ONE lease (in
                                     flight is one request, however heavy); 0 is a peek: nothing
                                     is taken, pruned or counted
  [6] stats TTL    integer seconds   TTL of the telemetry counters (optional, default 120)

REPLY  {allowed, remaining, retry_after_ms, reset_after_ms}
  allowed         1 or 0; a denied request takes no lease and writes nothing (its telemetry
                  counter aside)
  remaining       limit - live leases after this decision (>= 0)
  retry_after_ms  0 when allowed, else the wait until the earliest live lease expires: an upper
                  bound, since a release frees a slot sooner
  reset_after_ms  the wait until the last live lease expires (0 when none is live)
  All are measured from the caller's now_ms.

A lease is live while its expiry > now. An admission removes the expired members
(ZREMRANGEBYSCORE -inf now), adds the lease with score now + lease_ms, and keeps the key alive at
least lease_ms (PEXPIRE only when its PTTL is shorter): the key's expiry runs on Redis's clock and
only evicts idle state, the leases' expiries decide. An id that is already a live lease keeps its
one lease, counted once: it is admitted while the live leases, its own among them, are at most
`limit` (a limit lowered under held leases denies it), and its expiry moves to now + lease_ms.
A peek (cost 0) is allowed while live <= limit and says what is left.

EXAMPLE  (10 requests in flight, leases of 60 s, server clock)
  redis-cli EVAL "$(cat concurrency.lua)" 1 ratelockr:cc:{api}:user42 10 60000 "" lease-1
  1) (integer) 1    2) (integer) 9    3) (integer) 0    4) (integer) 60000
]]

-- The hot path is written for Redis's CPU, as sliding_window_log.lua's: the arguments are
-- checked with plain comparisons (x % 1 == 0 also rules out NaN and infinities), and only a call
-- with a bad one builds the helpers that name it; the cost and stats TTL the engine sends ('1',
-- '120') are recognised by a string comparison, cheaper than tonumber.
local nkeys = #KEYS
local limit, lease = tonumber(ARGV[1]), tonumber(ARGV[2])
local id, cost, stats_ttl = ARGV[4], ARGV[5], ARGV[6]
if cost == '1' or cost == nil or cost == '' then cost = 1 else cost = tonumber(cost) end
if stats_ttl == '120' or stats_ttl == nil or stats_ttl == '' then stats_ttl = 120 else stats_ttl = tonumber(stats_ttl) end
if not ((nkeys == 1 or nkeys == 3)
    and limit and limit % 1 == 0 and limit >= 1 and limit <= 1e15
    and lease and lease % 1 == 0 and lease >= 1 and lease <= 1e15
    and id ~= nil and id ~= ''
    and cost and cost % 1 == 0 and cost >= 0 and cost <= 1e15
    and stats_ttl and stats_ttl % 1 == 0 and stats_ttl >= 1 and stats_ttl <= 1e15) then
  local function fail(msg)
    return redis.error_reply('ratelockr concurrency: ' .. msg)
  end

  local function integer_arg(value, name, default, min)
    if value == nil or value == '' then
      if default ~= nil then return default end
      return nil, name .. ' is required'
    end
    local n = tonumber(value)
    if n == nil or n ~= n or n % 1 ~= 0 or n < min or n > 1e15 then
      return nil, name .. ' must be an integer >= ' .. min .. ', got \'' .. tostring(value) .. '\''
    end
    return n
  end

  if nkeys ~= 1 and nkeys ~= 3 then
    return fail('expected 1 key (leases) or 3 (leases, allowed counter, denied counter), got ' .. nkeys)
  end
  local err
  limit, err = integer_arg(ARGV[1], 'limit', nil, 1)
  if not limit then return fail(err) end
  lease, err = integer_arg(ARGV[2], 'lease_ms', nil, 1)
  if not lease then return fail(err) end
  if id == nil or id == '' then return fail('lease id (a unique request id) is required') end
  cost, err = integer_arg(ARGV[5], 'cost', 1, 0)
  if not cost then return fail(err) end
  stats_ttl, err = integer_arg(ARGV[6], 'stats TTL', 120, 1)
  if not stats_ttl then return fail(err) end
  return fail('invalid arguments')
end

local now = ARGV[3]
if now == nil or now == '' then
  local t = redis.call('TIME')
  -- TIME gives seconds and microseconds as strings; Lua's arithmetic reads them as numbers,
  -- once each.
  local us = t[2] + 0
  now = t[1] * 1000 + (us - us % 1000) / 1000
else
  now = tonumber(now)
  if now == nil or now ~= now or now % 1 ~= 0 or now < 0 or now > 1e15 then
    return redis.error_reply('ratelockr concurrency: now_ms must be an integer >= 0 or "", got \''
      .. tostring(ARGV[3]) .. '\'')
  end
end

local key = KEYS[1]
-- `now` printed exactly, for the exclusive bound `(now`: %d writes the digits %.17g would for an
-- integer below 2^53 (now <= 1e15), for less work. The leases this request needs: one, none for
-- a peek, none for an id that already holds a live one (looked up only when it decides: a
-- request that fits is admitted either way). lua/policy.lua repeats the blocks marked "shared",
-- kept one text with these by tests/engine/lua_blocks.rs.
-- shared: concurrency.read
local now_text = string.format('%d', now)
local live = redis.call('ZCOUNT', key, '(' .. now_text, '+inf')
local need = 1
if cost == 0 then
  need = 0
elseif live + 1 > limit then
  local own = redis.call('ZSCORE', key, id)
  if own and tonumber(own) > now then need = 0 end
end
local yes = live + need <= limit
-- end shared

-- An admission that costs (charge) prunes the expired leases and takes its own: after the prune
-- every member is live, and ZADD adds 1 for a new lease, 0 for one it renews. Every reply says
-- the free slots and when the last live lease expires; a denial also when room appears: once
-- the (live + need - limit)-th earliest live lease expires, the earliest unless the limit was
-- lowered under leases still held. A peek writes nothing.
local charge = cost > 0
local allowed, remaining, retry_after, reset_after = 0, 0, 0, 0
if yes then allowed = 1 end
-- shared: concurrency.decide
if yes and charge then
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now_text)
  live = live + redis.call('ZADD', key, now + lease, id)
  if redis.call('PTTL', key) < lease then redis.call('PEXPIRE', key, lease) end
end
remaining = limit - live
if remaining < 0 then remaining = 0 end
if live > 0 then reset_after = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]) - now end
if not yes then
  local nth = live + need - limit - 1
  retry_after = tonumber(redis.call('ZRANGEBYSCORE', key, '(' .. now_text, '+inf', 'WITHSCORES', 'LIMIT', nth, 1)[2]) - now
end
-- end shared

if nkeys == 3 and cost > 0 then
  local counter = KEYS[3 - allowed]
  if redis.call('INCR', counter) == 1 then redis.call('EXPIRE', counter, stats_ttl) end
end

return {allowed, math.floor(remaining), math.floor(retry_after), math.floor(reset_after)}
