--[[
The token bucket's Redis commands without its Lua logic, for the Lua-cost comparison in
docs/benchmarks.md (not used by the engine): TIME, GET and SET ... EX on KEYS[1] (an admission's
commands), with no argument checks, no refill arithmetic and no number formatting. If this
costs Redis about what lua/token_bucket.lua costs, the script's price is its commands, not its
logic.

KEYS [1] the bucket     ARGV (ignored)
]]
local t = redis.call('TIME')
redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], '99 1700000000000', 'EX', 2)
return {1, 99, 0, 10}
