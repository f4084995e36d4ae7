--[[
GCRA reference for the Lua-cost comparison (docs/benchmarks.md). Not used by the engine.

Written for RateLockr to do the same Redis-side work as go-redis/redis_rate's `allowN` script
(BSD-2-Clause), the best-known GCRA limiter on Redis, without reproducing its text: one TIME,
one GET of the theoretical arrival time (TAT), one SET ... EX on admission, nothing on denial,
and the same argument shape. Its own code is not copied here.

KEYS  [1] the TAT key (a string)
ARGV  [1] burst  [2] rate (per period)  [3] period (seconds)  [4] cost
REPLY {allowed, remaining, retry_after (s, string), reset_after (s, string)}
]]

local key = KEYS[1]
local burst = tonumber(ARGV[1])
local interval = tonumber(ARGV[3]) / tonumber(ARGV[2])
local cost = tonumber(ARGV[4])

local t = redis.call('TIME')
-- Seconds since 2017, so the fraction keeps its microseconds in a double.
local now = (t[1] - 1483228800) + t[2] / 1e6

local tat = tonumber(redis.call('GET', key)) or now
if tat < now then tat = now end

local new_tat = tat + interval * cost
local diff = now - (new_tat - interval * burst)
local remaining = math.floor(diff / interval + 0.5)
if remaining < 0 then
  return {0, 0, tostring(-diff), tostring(tat - now)}
end
local reset_after = new_tat - now
redis.call('SET', key, new_tat, 'EX', math.ceil(reset_after))
return {cost, remaining, '-1', tostring(reset_after)}
