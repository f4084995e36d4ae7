--[[
ratelockr sliding window log — one atomic rate-limit decision.

Every admitted request is logged in a sorted set with its arrival time as score; a request is
admitted when fewer than `limit` requests were admitted in the last `window_ms`. Exact, at the
price of one set member per admitted request: about 52 B per entry up to 128 entries, about
164 B past that, when Redis converts the set from a listpack to a skiplist (docs/benchmarks.md,
"Sliding window log memory"); above a limit of 128, prefer the sliding window counter. Redis runs a script on one thread, so counting and
logging cannot interleave with another client's call.

KEYS
  [1] the log: a sorted set, member = request id, score = arrival time (ms)
  [2] optional: the telemetry counter of allowed decisions (INCR'd when allowed)
  [3] optional: the telemetry counter of denied decisions (INCR'd when denied)
      KEYS[2] and KEYS[3] go together; give both or neither.

ARGV
  [1] limit        integer >= 1      requests admitted per window
  [2] window_ms    integer >= 1      the window's length in milliseconds
  [3] now_ms       integer ms or ""  milliseconds since the epoch; "" = the Redis server's clock
  [4] member       string            a unique id for this request: the engine sends 16 random
                                     URL-safe characters (96 bits); older engines sent a
                                     36-character UUID v4. Any string works: members are opaque,
                                     and entries are counted and expired by score alone, so logs
                                     written with UUID members keep working as they are.
  [5] cost         integer >= 0      log entries this request takes (optional, default 1;
                                     <= limit); entries after the first are `member#2`, ...;
                                     0 is a peek: nothing is logged, pruned or counted
  [6] stats TTL    integer seconds   TTL of the telemetry counters (optional, default 120)

REPLY  {allowed, remaining, retry_after_ms, reset_after_ms}
  allowed         1 or 0; a denied request is not logged
  remaining       requests still admissible in the window after this decision
  retry_after_ms  0 when allowed, else the exact wait until enough entries leave the window
  reset_after_ms  the wait until the log is empty
  Both are measured from the caller's now_ms, even when it is behind the newest entry.

Entries with score <= now - window_ms are not counted (ZCOUNT), and are removed
(ZREMRANGEBYSCORE) when a request is logged. A clock that goes backwards mints nothing: `now` is
never taken earlier than the newest logged entry, and a denied request writes nothing (had it
pruned with a later clock, a call with an earlier clock would find room that is not there).
The key's TTL is window_ms (PEXPIRE), set whenever a request is logged.

EXAMPLE  (5 requests per 1000 ms, server clock)
  redis-cli EVAL "$(cat sliding_window_log.lua)" 1 ratelockr:sw:{api}:user42 5 1000 "" req-1
  1) (integer) 1    2) (integer) 4    3) (integer) 0    4) (integer) 1000
]]

-- The hot path is written for Redis's CPU (docs/benchmarks.md, "Redis CPU per decision"): the arguments are
-- checked with plain comparisons (x % 1 == 0 also rules out NaN and infinities), and only a
-- call with a bad one builds the helpers that name it; the cost and stats TTL the engine sends
-- ('1', '120') are recognised by a string comparison, cheaper than tonumber.
local nkeys = #KEYS
local limit, window = tonumber(ARGV[1]), tonumber(ARGV[2])
local member, cost, stats_ttl = ARGV[4], ARGV[5], ARGV[6]
if cost == '1' or cost == nil or cost == '' then cost = 1 else cost = tonumber(cost) end
if stats_ttl == '120' or stats_ttl == nil or stats_ttl == '' then stats_ttl = 120 else stats_ttl = tonumber(stats_ttl) end
if not ((nkeys == 1 or nkeys == 3)
    and limit and limit % 1 == 0 and limit >= 1 and limit <= 1e15
    and window and window % 1 == 0 and window >= 1 and window <= 1e15
    and member ~= nil and member ~= ''
    and cost and cost % 1 == 0 and cost >= 0 and cost <= limit
    and stats_ttl and stats_ttl % 1 == 0 and stats_ttl >= 1 and stats_ttl <= 1e15) then
  local function fail(msg)
    return redis.error_reply('ratelockr sliding_window_log: ' .. msg)
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
    return fail('expected 1 key (log) or 3 (log, allowed counter, denied counter), got ' .. nkeys)
  end
  local err
  limit, err = integer_arg(ARGV[1], 'limit', nil, 1)
  if not limit then return fail(err) end
  window, err = integer_arg(ARGV[2], 'window_ms', nil, 1)
  if not window then return fail(err) end
  if member == nil or member == '' then return fail('member (a unique request id) is required') end
  cost, err = integer_arg(ARGV[5], 'cost', 1, 0)
  if not cost then return fail(err) end
  if cost > limit then
    return fail('cost ' .. cost .. ' exceeds limit ' .. limit .. ': such a request can never pass')
  end
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
  if now == nil or now ~= now or now % 1 ~= 0 or now < 0 then
    return redis.error_reply('ratelockr sliding_window_log: now_ms must be an integer >= 0 or "", got \''
      .. tostring(ARGV[3]) .. '\'')
  end
end

local key = KEYS[1]
-- The log's clock `at` is never behind its newest entry; waits are measured from the caller's
-- clock `now`, even when it is behind. The blocks marked "shared" are policy.lua's text too,
-- kept identical by tests/engine/lua_blocks.rs.
-- shared: sliding_window_log.read
local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
local at = now
local newest_score = nil
if newest[2] ~= nil then
  newest_score = tonumber(newest[2])
  if newest_score > now then at = newest_score end
end
-- Exclusive lower bound of the window, printed exactly: %d writes the digits %.17g would
-- for an integer below 2^53, for less work; beyond, %.17g.
local oldest_out = at - window
if oldest_out < 9007199254740992 and oldest_out > -9007199254740992 then
  oldest_out = string.format('%d', oldest_out)
else
  oldest_out = string.format('%.17g', oldest_out)
end
local count = redis.call('ZCOUNT', key, '(' .. oldest_out, '+inf')
local yes = count + cost <= limit
-- end shared

local charge = cost > 0
local allowed, remaining, retry_after, reset_after = 0, 0, 0, 0
if yes then allowed = 1 end
-- shared: sliding_window_log.decide
if yes and charge then
  remaining = limit - count - cost
  redis.call('ZREMRANGEBYSCORE', key, '-inf', oldest_out)
  if cost == 1 then
    redis.call('ZADD', key, at, member)
  else
    local args = {at, member}
    for j = 2, cost do
      args[#args + 1] = at
      args[#args + 1] = member .. '#' .. j
    end
    redis.call('ZADD', key, (table.unpack or unpack)(args)) -- 5.4 (Dragonfly) has only table.unpack, 5.1 only unpack
  end
  redis.call('PEXPIRE', key, window)
  reset_after = at + window - now
elseif yes then
  -- A peek (or an admission left uncharged): what is left, and when the log empties.
  remaining = limit - count
  if count > 0 then reset_after = newest_score + window - now end
else
  remaining = math.max(limit - count, 0)
  -- Room for `cost` more appears once the (count + cost - limit)-th oldest entry leaves.
  local entry = redis.call('ZRANGEBYSCORE', key, '(' .. oldest_out, '+inf', 'WITHSCORES',
    'LIMIT', count + cost - limit - 1, 1)
  retry_after = tonumber(entry[2]) + window - now
  reset_after = newest_score + window - now
end
-- end shared

if nkeys == 3 and cost > 0 then
  local counter = KEYS[3 - allowed]
  if redis.call('INCR', counter) == 1 then redis.call('EXPIRE', counter, stats_ttl) end
end

return {allowed, math.floor(remaining), math.floor(retry_after), math.floor(reset_after)}
