--[[
The token bucket's Redis commands without its Lua logic, for the Lua-cost comparison in
docs/benchmarks.md (not used by the engine): TIME, HMGET, HSET, EXPIRE on KEYS[1], with no
argument checks, no refill arithmetic and no number formatting. If this costs Redis about what
lua/token_bucket.lua costs, the script's price is its commands, not its logic.

KEYS [1] the bucket hash     ARGV (ignored)
]]
local t = redis.call('TIME')
redis.call('HMGET', KEYS[1], 'tokens', 'last_refill')
redis.call('HSET', KEYS[1], 'tokens', '99', 'last_refill', t[1])
redis.call('EXPIRE', KEYS[1], 2)
return {1, 99, 0, 10}
