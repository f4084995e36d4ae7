--[[
ratelockr lease — releases or renews one lease in one or more concurrency limits, atomically.

A request admitted by concurrency.lua, or by a policy.lua stack with in-flight (cc) limits, holds
a lease, under its lease id, in the leases set of every concurrency limit of its policy (a policy
may stack several; their keys share the policy's hash tag, so one call reaches them all, in Redis
Cluster too). When the request ends, "release" frees its slot in every set at once; a long
request "renew"s its lease before it expires.

KEYS
  [1..n] the leases sets (sorted sets, member = lease id, score = expiry in ms), n >= 1

ARGV
  [1] op           "release" or "renew"
  [2] lease id     string            the id the lease was taken under (concurrency.lua's ARGV[4],
                                     policy.lua's member, ARGV[6])
  [3] now_ms       integer ms or ""  milliseconds since the epoch; "" = the Redis server's clock
  [4..3+n] lease_ms  integer >= 1    renew only: the lease's new life from now, one per key in
                                     KEYS order
  [4] stats_ttl_secs integer >= 1    release only, optional: when given, the LAST key is not a
                                     leases set but this second's `released` telemetry counter
                                     of the rule or policy (<prefix>:stats:{<name>}:<second>:
                                     released, the policy's hash tag, so the same slot): it is
                                     INCRed once when the lease freed a slot (the reply > 0), and
                                     given this TTL. Without it, every key is a leases set.

REPLY  an integer (the counter key, when there is one, is not counted among the sets)
  release  how many of the sets held the lease LIVE (expiry > now), each now freed of it. The
           id is removed from every set; one that had already expired frees nothing (its slot
           came back when it expired) and is not counted: 0 says the lease freed nothing,
           because it had been released before or had expired.
  renew    how many of the sets held the lease live and now hold it until now + lease_ms (ZADD
           XX), their key kept alive at least lease_ms (PEXPIRE only when its PTTL is shorter).
           Fewer than n: the lease had expired or been released there, and is not taken again;
           the caller must not assume it holds a slot in those limits.

EXAMPLE  (release the lease taken in concurrency.lua's example)
  redis-cli EVAL "$(cat lease.lua)" 1 ratelockr:cc:{api}:user42 release lease-1 ""
  (integer) 1
]]

local nkeys, op, id, now = #KEYS, ARGV[1], ARGV[2], ARGV[3]
local function fail(msg)
  return redis.error_reply('ratelockr lease: ' .. msg)
end

if nkeys < 1 then return fail('expected at least 1 key (a leases set), got 0') end
if op ~= 'release' and op ~= 'renew' then
  return fail('op must be \'release\' or \'renew\', got \'' .. tostring(op) .. '\'')
end
if id == nil or id == '' then return fail('lease id is required') end
local lease_ms = {}
if op == 'renew' then
  if #ARGV ~= 3 + nkeys then
    return fail('renew takes one lease_ms per key: expected ' .. nkeys .. ' (ARGV[4..' .. (3 + nkeys)
      .. ']), got ' .. math.max(#ARGV - 3, 0))
  end
  for i = 1, nkeys do
    local n = tonumber(ARGV[3 + i])
    if n == nil or n ~= n or n % 1 ~= 0 or n < 1 or n > 1e15 then
      return fail('lease_ms for key ' .. i .. ' (ARGV[' .. (3 + i) .. ']) must be an integer >= 1, got \''
        .. tostring(ARGV[3 + i]) .. '\'')
    end
    lease_ms[i] = n
  end
elseif #ARGV > 4 then
  return fail('release takes 3 ARGV (op, lease id, now_ms) and an optional stats TTL, got ' .. #ARGV)
end
-- release with a stats TTL: the last key is this second's released counter.
local counter, counter_ttl
if op == 'release' and #ARGV == 4 then
  counter_ttl = tonumber(ARGV[4])
  if counter_ttl == nil or counter_ttl ~= counter_ttl or counter_ttl % 1 ~= 0 or counter_ttl < 1
      or counter_ttl > 1e9 then
    return fail('stats_ttl_secs (ARGV[4]) must be an integer >= 1, got \'' .. tostring(ARGV[4]) .. '\'')
  end
  if nkeys < 2 then
    return fail('a release with a stats TTL takes at least 2 keys (leases sets, then the counter), got '
      .. nkeys)
  end
  counter = KEYS[nkeys]
  nkeys = nkeys - 1
end

if now == nil or now == '' then
  local t = redis.call('TIME')
  local us = t[2] + 0
  now = t[1] * 1000 + (us - us % 1000) / 1000
else
  now = tonumber(now)
  if now == nil or now ~= now or now % 1 ~= 0 or now < 0 or now > 1e15 then
    return fail('now_ms must be an integer >= 0 or "", got \'' .. tostring(ARGV[3]) .. '\'')
  end
end

local count = 0
for i = 1, nkeys do
  local key = KEYS[i]
  local expiry = redis.call('ZSCORE', key, id)
  if expiry then
    if op == 'release' then
      redis.call('ZREM', key, id)
      if tonumber(expiry) > now then count = count + 1 end
    elseif tonumber(expiry) > now then
      redis.call('ZADD', key, 'XX', now + lease_ms[i], id)
      if redis.call('PTTL', key) < lease_ms[i] then redis.call('PEXPIRE', key, lease_ms[i]) end
      count = count + 1
    end
  end
end
if counter and count > 0 then
  if redis.call('INCR', counter) == 1 then redis.call('EXPIRE', counter, counter_ttl) end
end
return count
