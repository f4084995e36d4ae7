-- MEMORY USAGE of one full sliding window log key, with the old UUID-shaped members or the
-- engine's 16-character ones (docs/benchmarks.md, "Sliding window log memory"):
--   redis-cli --eval bench/sliding_window_log_memory.lua k , LIMIT uuid|short
-- ARGV[1] limit, ARGV[2] member style: uuid|short
local n = tonumber(ARGV[1])
redis.call('DEL', KEYS[1])
local chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
for i = 1, n do
  local m
  if ARGV[2] == 'uuid' then
    m = string.format('%08x-%04x-4%03x-a%03x-%012x', 268435456 + i, i % 65536, i % 4096, (i * 7) % 4096, 1e11 + i * 13)
  else
    m = 'm' .. string.format('%015d', i)
  end
  redis.call('ZADD', KEYS[1], 1700000000000 + i, m)
end
redis.call('PEXPIRE', KEYS[1], 60000)
return redis.call('MEMORY', 'USAGE', KEYS[1], 'SAMPLES', 0)
