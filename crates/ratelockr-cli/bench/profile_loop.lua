--[[
The profile of issue 24 (docs/benchmarks.md): what one piece of a script costs Redis, measured
inside Redis. Runs ARGV[2] iterations of the piece named ARGV[1]; `bench --lua` times each
with INFO commandstats and subtracts the empty loop. Not used by the engine.

KEYS  [1] a scratch string  [2] a scratch counter  [3] a scratch hash  [4] a scratch sorted set
ARGV  [1] the piece  [2] iterations  [3] "100" [4] "100" [5] "1" [6] "120" (the token bucket's
    capacity, rate, cost and stats TTL as the engine sends them, for the validation pieces)
REPLY the iterations run
]]

local piece, n = ARGV[1], tonumber(ARGV[2])
local s, c, h, z = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local packed = struct.pack('<dd', 99.5, 1700000000000)
redis.call('SET', s, packed, 'EX', 60)
redis.call('SET', c, '1', 'EX', 60)
redis.call('HSET', h, 'w', '1700000000', 'c', '1', 'p', '0', 't', '1700000000000')
redis.call('PEXPIRE', h, 60000)
redis.call('ZADD', z, 1700000000000, 'm')
redis.call('PEXPIRE', z, 60000)
local number = 1700000000000 + 0.0
local sink

-- The validation of the token bucket's ARGV, the way lua/token_bucket.lua did it before
-- issue 24 (helpers built per call) and the way it does now (plain comparisons).
local function before()
  local function fail(msg) return msg end
  local function integer_arg(value, name, default, min)
    min = min or 1
    if value == nil or value == '' then
    if default ~= nil then return default end
    return nil, name .. ' is required'
    end
    local x = tonumber(value)
    if x == nil or x ~= x or x % 1 ~= 0 or x < min or x > 1e15 then
    return nil, name .. ' must be an integer'
    end
    return x
  end
  local capacity, err = integer_arg(ARGV[3], 'capacity')
  if not capacity then return fail(err) end
  local rate = tonumber(ARGV[4])
  if rate == nil or rate ~= rate or rate <= 0 or rate == math.huge then return fail('rate') end
  local cost
  cost, err = integer_arg(ARGV[5], 'cost', 1, 0)
  if not cost then return fail(err) end
  local ttl
  ttl, err = integer_arg(ARGV[6], 'stats TTL', 120)
  if not ttl then return fail(err) end
  return capacity + rate + cost + ttl
end

-- One loop per piece, so that no piece pays for finding its branch.
if piece == 'empty' then
  for _ = 1, n do
    sink = nil
  end
elseif piece == 'TIME' then
  for _ = 1, n do
    sink = redis.call('TIME')
  end
elseif piece == 'GET' then
  for _ = 1, n do
    sink = redis.call('GET', s)
  end
elseif piece == 'SET EX' then
  for _ = 1, n do
    redis.call('SET', s, packed, 'EX', '60')
  end
elseif piece == 'SET PX' then
  for _ = 1, n do
    redis.call('SET', s, packed, 'PX', '60000')
  end
elseif piece == 'SET KEEPTTL' then
  for _ = 1, n do
    redis.call('SET', s, packed, 'KEEPTTL')
  end
elseif piece == 'INCR' then
  for _ = 1, n do
    redis.call('INCR', c)
  end
elseif piece == 'INCRBY' then
  for _ = 1, n do
    redis.call('INCRBY', c, '1')
  end
elseif piece == 'INCRBY, a number argument' then
  for _ = 1, n do
    redis.call('INCRBY', c, 1)
  end
elseif piece == 'DECRBY' then
  for _ = 1, n do
    redis.call('DECRBY', c, '1')
  end
elseif piece == 'PTTL' then
  for _ = 1, n do
    redis.call('PTTL', c)
  end
elseif piece == 'PEXPIRE' then
  for _ = 1, n do
    redis.call('PEXPIRE', c, '60000')
  end
elseif piece == 'EXPIRE' then
  for _ = 1, n do
    redis.call('EXPIRE', c, '60')
  end
elseif piece == 'HMGET 4 fields' then
  for _ = 1, n do
    sink = redis.call('HMGET', h, 'w', 'c', 'p', 't')
  end
elseif piece == 'HSET 4 fields' then
  for _ = 1, n do
    redis.call('HSET', h, 'w', '1700000000', 'c', '2', 'p', '0', 't', '1700000000001')
  end
elseif piece == 'ZRANGE newest' then
  for _ = 1, n do
    sink = redis.call('ZRANGE', z, -1, -1, 'WITHSCORES')
  end
elseif piece == 'ZCOUNT' then
  for _ = 1, n do
    sink = redis.call('ZCOUNT', z, '(1699999999000', '+inf')
  end
elseif piece == 'ZADD' then
  for _ = 1, n do
    redis.call('ZADD', z, '1700000000000', 'm')
  end
elseif piece == 'ZREMRANGEBYSCORE' then
  for _ = 1, n do
    redis.call('ZREMRANGEBYSCORE', z, '-inf', '1699999999000')
  end
elseif piece == 'tonumber' then
  for _ = 1, n do
    sink = tonumber(ARGV[3])
  end
elseif piece == "string.format('%d')" then
  for _ = 1, n do
    sink = string.format('%d', number)
  end
elseif piece == "string.format('%.17g')" then
  for _ = 1, n do
    sink = string.format('%.17g', number)
  end
elseif piece == 'math.floor' then
  for _ = 1, n do
    sink = math.floor(number)
  end
elseif piece == 'a closure' then
  for _ = 1, n do
    sink = function() return number end
  end
elseif piece == 'a reply table of 4' then
  for _ = 1, n do
    sink = {1, 2, 3, 4}
  end
elseif piece == 'struct.pack' then
  for _ = 1, n do
    sink = struct.pack('<dd', 99.5, number)
  end
elseif piece == 'struct.unpack' then
  for _ = 1, n do
    sink = struct.unpack('<dd', packed)
  end
elseif piece == 'validation, helpers per call (before)' then
  for _ = 1, n do
    sink = before()
  end
elseif piece == 'validation, plain comparisons (after)' then
  for _ = 1, n do
    local capacity, rate, cost, ttl = tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5], ARGV[6]
    if cost == '1' then cost = 1 elseif cost == nil or cost == '' then cost = 1 else cost = tonumber(cost) end
    if ttl == '120' or ttl == nil or ttl == '' then ttl = 120 else ttl = tonumber(ttl) end
    sink = capacity and capacity % 1 == 0 and capacity >= 1 and capacity <= 1e15
      and rate and rate > 0 and rate <= 1.7976931348623157e308
      and cost and cost % 1 == 0 and cost >= 0 and cost <= capacity
      and ttl and ttl % 1 == 0 and ttl >= 1 and ttl <= 1e15
  end
else
  return redis.error_reply('profile_loop: unknown piece ' .. tostring(piece))
end
return n
