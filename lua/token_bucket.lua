--[[
ratelockr token bucket — one atomic rate-limit decision.

Redis runs a script on one thread, so reading, refilling and debiting the bucket cannot
interleave with another client's call: the script is the critical section.

KEYS
  [1] the bucket: a 16-byte string, struct.pack('<dd', tokens, last_refill_ms): two
      little-endian IEEE-754 doubles, tokens (fractional) then last_refill in ms; absent = a
      full bucket. Any client can read it (Python: struct.unpack('<dd', value)).
  [2] optional: the telemetry counter of allowed decisions (INCR'd when allowed)
  [3] optional: the telemetry counter of denied decisions (INCR'd when denied)
      KEYS[2] and KEYS[3] go together; give both or neither.
  [4] optional, with [2] and [3]: the counter of delayed admissions (INCR'd instead of [2] when
      admitted with delay_ms > 0; without it they count as allowed)

ARGV
  [1] capacity      integer >= 1      tokens the bucket holds when full
  [2] refill rate   number > 0        tokens added per second
  [3] now_ms        integer ms or ""  milliseconds since the epoch; "" = the Redis server's clock
  [4] cost          integer >= 0      tokens this request takes (optional, default 1; <= capacity);
                                    0 is a peek: nothing is consumed, written or counted
  [5] stats TTL     integer seconds   TTL of the telemetry counters (optional, default 120)
  [6] max_delay_ms  integer >= 0      optional: delay instead of deny. A request the bucket
                                    would admit within max_delay_ms is admitted now with
                                    delay_ms, the wait, and takes its tokens as though it came
                                    delay_ms later: the tokens go below zero (at most
                                    max_delay_ms x rate / 1000 below), and the next call's
                                    refill pays the debt back; one that would wait longer is
                                    denied and debits nothing. Given (even "0" or ""), the
                                    reply has a 5th integer.

REPLY  {allowed, remaining, retry_after_ms, reset_after_ms}, and delay_ms when ARGV[6] is given
  allowed         1 or 0; a denied request debits nothing
  remaining       whole tokens left after this decision
  retry_after_ms  0 when allowed, else the least whole wait after which this cost passes
  reset_after_ms  the least whole wait until the bucket is full again
  Both are measured from the caller's now_ms, even when it is behind last_refill, and found
  in the very arithmetic the next call performs on the stored state, so they hold exactly
  however long the float refills have run.
  delay_ms        0, or the wait before an admitted request may start; with max_delay_ms a
                  delayed admission leaves remaining 0, and a denial's retry_after_ms is the
                  wait until the request would pass delayed by max_delay_ms at most

Refill is lazy: tokens = min(capacity, tokens + max(now - last_refill, 0) * rate / 1000).
A new bucket starts full. A clock that goes backwards mints nothing: elapsed time is clamped at
zero and last_refill never moves back. Only an admission writes: one SET that stores the state
and sets the TTL, ceil((capacity / rate + max_delay_ms / 1000) * 2) seconds (the time to fill
from the deepest debt, twice), so idle buckets evict themselves. On the
server's clock the TTL is set by the first admission of each half-TTL period (now_ms floored to
a multiple of TTL/2) and kept (KEEPTTL) by the others, so after any admission at least half the
TTL is left; on a caller's clock every admission sets it. A denial writes nothing (below
capacity the refill is linear, so the stored state yields the same tokens later); half the TTL,
the time to fill, outlives the last admission's bucket until it is full, and an absent key is
exactly a full bucket. Redis work: TIME, GET, and SET on admission only.

EXAMPLE  (10 tokens, 5 per second, server clock, cost 1)
  redis-cli EVAL "$(cat token_bucket.lua)" 1 ratelockr:tb:{api}:user42 10 5 "" 1
  1) (integer) 1    2) (integer) 9    3) (integer) 0    4) (integer) 200
]]

-- The hot path is written for Redis's CPU (docs/benchmarks.md, "Redis CPU per decision"): the arguments are
-- checked with plain comparisons (x % 1 == 0 also rules out NaN and infinities), and only a
-- call with a bad one builds the helpers that name it; the cost and stats TTL the engine sends
-- ('1', '120') are recognised by a string comparison, cheaper than tonumber; no closure is
-- built per call, and no library call where arithmetic does.
local nkeys = #KEYS
local capacity, rate = tonumber(ARGV[1]), tonumber(ARGV[2])
local cost, stats_ttl = ARGV[4], ARGV[5]
local max_delay, delaying = ARGV[6], ARGV[6] ~= nil
if max_delay == nil or max_delay == '' or max_delay == '0' then max_delay = 0 else max_delay = tonumber(max_delay) end
if cost == '1' or cost == nil or cost == '' then cost = 1 else cost = tonumber(cost) end
if stats_ttl == '120' or stats_ttl == nil or stats_ttl == '' then stats_ttl = 120 else stats_ttl = tonumber(stats_ttl) end
if not ((nkeys == 1 or nkeys == 3 or nkeys == 4)
    and capacity and capacity % 1 == 0 and capacity >= 1 and capacity <= 1e15
    and rate and rate > 0 and rate <= 1.7976931348623157e308
    and cost and cost % 1 == 0 and cost >= 0 and cost <= capacity
    and stats_ttl and stats_ttl % 1 == 0 and stats_ttl >= 1 and stats_ttl <= 1e15
    and max_delay and max_delay % 1 == 0 and max_delay >= 0 and max_delay <= 1e15) then
  local function fail(msg)
    return redis.error_reply('ratelockr token_bucket: ' .. msg)
  end

  local function integer_arg(value, name, default, min)
    min = min or 1
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

  if #KEYS ~= 1 and #KEYS ~= 3 and #KEYS ~= 4 then
    return fail('expected 1 key (bucket), 3 (bucket, allowed counter, denied counter) or 4 (and delayed counter), got ' .. #KEYS)
  end

  local capacity, err = integer_arg(ARGV[1], 'capacity')
  if not capacity then return fail(err) end
  local rate = tonumber(ARGV[2])
  if rate == nil or rate ~= rate or rate <= 0 or rate == math.huge then
    return fail('refill rate must be a number > 0 (tokens per second), got \'' .. tostring(ARGV[2]) .. '\'')
  end
  local cost
  cost, err = integer_arg(ARGV[4], 'cost', 1, 0)
  if not cost then return fail(err) end
  if cost > capacity then
    return fail('cost ' .. cost .. ' exceeds capacity ' .. capacity .. ': such a request can never pass')
  end
  local stats_ttl
  stats_ttl, err = integer_arg(ARGV[5], 'stats TTL', 120)
  if not stats_ttl then return fail(err) end
  local max_delay
  max_delay, err = integer_arg(ARGV[6], 'max_delay_ms', 0, 0)
  if not max_delay then return fail(err) end
  return fail('invalid arguments')
end

local now = ARGV[3]
local server_clock = now == nil or now == ''
if server_clock then
  local t = redis.call('TIME')
  -- TIME gives seconds and microseconds as strings; Lua's arithmetic reads them as numbers,
  -- once each.
  local us = t[2] + 0
  now = t[1] * 1000 + (us - us % 1000) / 1000
else
  now = tonumber(now)
  if not (now and now % 1 == 0 and now >= 0 and now <= 9007199254740992) then
    return redis.error_reply('ratelockr token_bucket: now_ms must be an integer >= 0 (at most 2^53) or "", got \''
      .. tostring(ARGV[3]) .. '\'')
  end
end

local key = KEYS[1]
local err_prefix = 'ratelockr token_bucket: '
-- Binary, not text: struct packs and unpacks the two doubles exactly, without the number
-- formatting and parsing that cost Redis about a fifth of this script (docs/benchmarks.md).
-- The blocks marked "shared" are policy.lua's text too, kept identical by tests/engine/lua_blocks.rs.
-- shared: token_bucket.read
local state = redis.call('GET', key)
local tokens, last
if state then
  if #state == 16 then tokens, last = struct.unpack('<dd', state) end
  if tokens == nil or tokens ~= tokens or last % 1 ~= 0 then
    return redis.error_reply(err_prefix .. key .. ' holds ' .. #state
      .. ' bytes that are not a bucket (16 bytes: tokens and last_refill_ms, little-endian doubles)')
  end
else
  tokens, last = capacity, now
end
-- end shared

-- `stored` and `last` are the state the next call will start from; this call refills from it
-- with the very expression that the waits below search: stored + elapsed * rate / 1000.
-- shared: token_bucket.refill
local stored = tokens
local elapsed = now - last
if elapsed > 0 then
  tokens = tokens + elapsed * rate / 1000
  if tokens > capacity then tokens = capacity end
end
local yes = tokens >= cost
-- end shared
-- shared: token_bucket.delay
-- Delay instead of deny: the least whole ms d after `last` at which the refill of the stored
-- tokens reaches the cost (found as the waits below find it), as a wait from the caller's clock.
local delay = 0
if not yes and max_delay > 0 then
  local d = (cost - stored) * 1000 / rate
  local fraction = d % 1
  if fraction > 0 then d = d - fraction + 1 end
  while d > 1 and stored + (d - 1) * rate / 1000 >= cost do d = d - 1 end
  while stored + d * rate / 1000 < cost do d = d + 1 end
  delay = last + d - now
end
-- end shared
if delay > 0 and delay <= max_delay then
  yes = true
  -- shared: token_bucket.delayed
  -- Admitted `delay` ms from now, it takes the tokens it finds then; stored as of the clock the
  -- charge keeps (max(now, last)), less the refill until then, which the next call adds back:
  -- the stored tokens go below zero, and nothing more passes before the debt is paid.
  local from = last
  if now > from then from = now end
  tokens = stored
  if now + delay > last then
    tokens = stored + (now + delay - last) * rate / 1000
    if tokens > capacity then tokens = capacity end
  end
  if now + delay > from then tokens = tokens - (now + delay - from) * rate / 1000 end
  -- end shared
else
  delay = 0
end

local allowed, retry_after, reset_after = 0, 0, 0
if yes then
  allowed = 1
  if cost > 0 then
    -- One SET writes the state (the next call starts from these very doubles) and, when the
    -- TTL is due, the TTL: ceil((capacity / rate + max_delay / 1000) * 2) seconds. On the server's clock (the one
    -- Redis expires keys by) the TTL is renewed by the first admission of each half-TTL
    -- period: one in that period set it, so at least half of it is left, and half is at least
    -- the time an empty bucket takes to fill. KEEPTTL costs Redis less than a new TTL
    -- (docs/benchmarks.md). On a caller's clock, every admission. The TTL goes as text made
    -- here: %d is cheaper than the %.17g Redis applies to a Lua number, and the same digits
    -- for an integer below 2^53.
    -- shared: token_bucket.charge
    tokens = tokens - cost
    local previous = last
    if now > last then last = now end
    stored = tokens
    local ttl = (capacity / rate + max_delay / 1000) * 2
    local fraction = ttl % 1
    if fraction > 0 then ttl = ttl - fraction + 1 end
    local half = ttl * 500
    if server_clock and state and now - now % half == previous - previous % half then
      redis.call('SET', key, struct.pack('<dd', tokens, last), 'KEEPTTL')
    else
      if ttl < 9007199254740992 then ttl = string.format('%d', ttl) end
      redis.call('SET', key, struct.pack('<dd', tokens, last), 'EX', ttl)
    end
    -- end shared
  end
end

-- The waits: the least whole ms d after `last` at which the next call's refill of the stored
-- tokens reaches the target (the division can round either way; the loops settle it in the
-- next call's own arithmetic), as a wait from the caller's clock, which may be behind `last`.
-- The retry target is the cost (denials only), the reset target the capacity. A denial
-- writes nothing: the refill is linear below capacity, so the stored state yields the same
-- tokens later as this call's would.
-- shared: token_bucket.waits
for target_is_capacity = allowed, 1 do
  local target, needed = cost, true
  if target_is_capacity == 1 then target, needed = capacity, tokens < capacity end
  if needed and stored < target then
    local d = (target - stored) * 1000 / rate
    local fraction = d % 1
    if fraction > 0 then d = d - fraction + 1 end
    while d > 1 and stored + (d - 1) * rate / 1000 >= target do d = d - 1 end
    while stored + d * rate / 1000 < target do d = d + 1 end
    local wait = last + d - now
    if wait < 0 then wait = 0 end
    if target_is_capacity == 1 then reset_after = wait else retry_after = wait end
  end
end
-- end shared

-- A denial under max_delay: the wait until the request would pass, delayed by max_delay.
if allowed == 0 and max_delay > 0 then retry_after = retry_after - max_delay end
local remaining = tokens
if remaining < 0 then remaining = 0 end -- a debt left by delayed admissions: nothing passes now

if nkeys >= 3 and cost > 0 then
  local counter = KEYS[3 - allowed]
  if delay > 0 and nkeys == 4 then counter = KEYS[4] end
  if redis.call('INCR', counter) == 1 then redis.call('EXPIRE', counter, stats_ttl) end
end

if delaying then
  return {allowed, math.floor(remaining), math.floor(retry_after), math.floor(reset_after), math.floor(delay)}
end
return {allowed, math.floor(remaining), math.floor(retry_after), math.floor(reset_after)}
