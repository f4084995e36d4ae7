-- lua/token_bucket.lua as design.md first specified it (state in a hash, TTL renewed on every
-- call: TIME, HMGET, HSET, EXPIRE), kept as the "before" of the string-state change for the
-- Lua-cost comparison in docs/benchmarks.md. Not used by the engine.
--[[
ratelockr token bucket — one atomic rate-limit decision.

Redis runs a script on one thread, so reading, refilling and debiting the bucket cannot
interleave with another client's call: the script is the critical section.

KEYS
  [1] the bucket: a hash with fields `tokens` (float, stored exactly) and `last_refill` (ms)
  [2] optional: the telemetry counter of allowed decisions (INCR'd when allowed)
  [3] optional: the telemetry counter of denied decisions (INCR'd when denied)
      KEYS[2] and KEYS[3] go together; give both or neither.

ARGV
  [1] capacity      integer >= 1      tokens the bucket holds when full
  [2] refill rate   number > 0        tokens added per second
  [3] now_ms        integer ms or ""  milliseconds since the epoch; "" = the Redis server's clock
  [4] cost          integer >= 1      tokens this request takes (optional, default 1; <= capacity)
  [5] stats TTL     integer seconds   TTL of the telemetry counters (optional, default 120)

REPLY  {allowed, remaining, retry_after_ms, reset_after_ms}
  allowed         1 or 0; a denied request debits nothing
  remaining       whole tokens left after this decision
  retry_after_ms  0 when allowed, else the wait (rounded up) after which this cost passes
  reset_after_ms  the wait until the bucket is full again

Refill is lazy: tokens = min(capacity, tokens + max(now - last_refill, 0) * rate / 1000).
A new bucket starts full. A clock that goes backwards mints nothing: elapsed time is clamped at
zero and last_refill never moves back. The key's TTL is ceil(capacity / rate * 2) seconds,
renewed on every call, so idle buckets evict themselves.

EXAMPLE  (10 tokens, 5 per second, server clock, cost 1)
  redis-cli EVAL "$(cat token_bucket.lua)" 1 ratelockr:tb:{api}:user42 10 5 "" 1
  1) (integer) 1    2) (integer) 9    3) (integer) 0    4) (integer) 200
]]

-- The arguments are checked with plain comparisons first, and only a call with a bad one
-- builds the helpers that name it: closures cost Redis a little on every call, and this
-- script runs on every request. (About a tenth of the script's CPU; docs/benchmarks.md.)
local capacity, rate = tonumber(ARGV[1]), tonumber(ARGV[2])
local cost, stats_ttl = ARGV[4], ARGV[5]
if cost == nil or cost == '' then cost = 1 else cost = tonumber(cost) end
if stats_ttl == nil or stats_ttl == '' then stats_ttl = 120 else stats_ttl = tonumber(stats_ttl) end
if not ((#KEYS == 1 or #KEYS == 3)
    and capacity and capacity == capacity and capacity % 1 == 0 and capacity >= 1 and capacity <= 1e15
    and rate and rate == rate and rate > 0 and rate ~= math.huge
    and cost and cost == cost and cost % 1 == 0 and cost >= 1 and cost <= 1e15 and cost <= capacity
    and stats_ttl and stats_ttl == stats_ttl and stats_ttl % 1 == 0 and stats_ttl >= 1
    and stats_ttl <= 1e15) then
  local function fail(msg)
    return redis.error_reply('ratelockr token_bucket: ' .. msg)
  end

  local function integer_arg(value, name, default)
    if value == nil or value == '' then
      if default ~= nil then return default end
      return nil, name .. ' is required'
    end
    local n = tonumber(value)
    if n == nil or n ~= n or n % 1 ~= 0 or n < 1 or n > 1e15 then
      return nil, name .. ' must be an integer >= 1, got \'' .. tostring(value) .. '\''
    end
    return n
  end

  if #KEYS ~= 1 and #KEYS ~= 3 then
    return fail('expected 1 key (bucket) or 3 (bucket, allowed counter, denied counter), got ' .. #KEYS)
  end

  local capacity, err = integer_arg(ARGV[1], 'capacity')
  if not capacity then return fail(err) end
  local rate = tonumber(ARGV[2])
  if rate == nil or rate ~= rate or rate <= 0 or rate == math.huge then
    return fail('refill rate must be a number > 0 (tokens per second), got \'' .. tostring(ARGV[2]) .. '\'')
  end
  local cost
  cost, err = integer_arg(ARGV[4], 'cost', 1)
  if not cost then return fail(err) end
  if cost > capacity then
    return fail('cost ' .. cost .. ' exceeds capacity ' .. capacity .. ': such a request can never pass')
  end
  local stats_ttl
  stats_ttl, err = integer_arg(ARGV[5], 'stats TTL', 120)
  if not stats_ttl then return fail(err) end
  return fail('invalid arguments')
end

local now
if ARGV[3] == nil or ARGV[3] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  now = tonumber(ARGV[3])
  if now == nil or now ~= now or now % 1 ~= 0 or now < 0 then
    return redis.error_reply('ratelockr token_bucket: now_ms must be an integer >= 0 or "", got \''
      .. tostring(ARGV[3]) .. '\'')
  end
end

local state = redis.call('HMGET', KEYS[1], 'tokens', 'last_refill')
local tokens = tonumber(state[1])
local last = tonumber(state[2])
if tokens == nil or last == nil then
  tokens, last = capacity, now
end

-- The same expression refills here and in retry_after below, so a client that waits exactly
-- retry_after_ms sees exactly the refill that was promised.
-- The same expression as `refilled` below, so a client that waits exactly retry_after_ms
-- sees exactly the refill that was promised.
tokens = math.min(capacity, tokens + math.max(now - last, 0) * rate / 1000)
if now > last then last = now end

local allowed = 0
local retry_after = 0
if tokens >= cost then
  allowed = 1
  tokens = tokens - cost
else
  local function refilled(base, elapsed)
    return math.min(capacity, base + elapsed * rate / 1000)
  end
  retry_after = math.ceil((cost - tokens) * 1000 / rate)
  -- The division can round either way: settle on the least wait that refills enough.
  while retry_after > 1 and refilled(tokens, retry_after - 1) >= cost do
    retry_after = retry_after - 1
  end
  while refilled(tokens, retry_after) < cost do retry_after = retry_after + 1 end
end

local reset_after = math.ceil((capacity - tokens) * 1000 / rate)
-- %.17g round-trips a double exactly, so the next call starts from this very value.
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'last_refill', last)
redis.call('EXPIRE', KEYS[1], math.ceil(capacity / rate * 2))

if #KEYS == 3 then
  local counter = KEYS[3 - allowed]
  if redis.call('INCR', counter) == 1 then redis.call('EXPIRE', counter, stats_ttl) end
end

return {allowed, math.floor(tokens), retry_after, reset_after}
