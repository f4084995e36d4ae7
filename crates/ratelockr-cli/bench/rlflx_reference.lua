--[[
rate-limiter-flexible reference for the Lua-cost comparison (docs/benchmarks.md, issue 24). Not
used by the engine.

Written for RateLockr to do the same Redis-side work as the script that
animir/node-rate-limiter-flexible's RateLimiterRedis sends for `consume` (ISC), without
reproducing its text: a SET of 0 with the duration's EX and NX (which opens a window only when
there is none), an INCRBY of the points, a PTTL, and an EXPIRE only for a counter found without
a TTL. Its client compares the count with the limit; the script decides nothing itself.

KEYS  [1] the counter
ARGV  [1] points consumed  [2] the duration in seconds
REPLY {count, ttl_ms}
]]

local key, duration = KEYS[1], ARGV[2]
redis.call('SET', key, 0, 'EX', duration, 'NX')
local count = redis.call('INCRBY', key, ARGV[1])
local ttl = redis.call('PTTL', key)
if ttl == -1 then
  redis.call('EXPIRE', key, duration)
  ttl = duration * 1000
end
return {count, ttl}
