--[[
ratelockr fixed window — one atomic rate-limit decision.

One integer counter per client; its lifetime is the window. Cheapest of the three, at the price
of the boundary burst: up to 2 x limit requests can pass around a window's edge. Redis runs a
script on one thread, so the increment and the check cannot interleave with another client's.

KEYS
  [1] the counter: an integer string whose PTTL is what is left of the window
  [2] optional: the telemetry counter of allowed decisions (INCR'd when allowed)
  [3] optional: the telemetry counter of denied decisions (INCR'd when denied)
      KEYS[2] and KEYS[3] go together; give both or neither.

ARGV
  [1] limit        integer >= 1      requests (cost units) admitted per window
  [2] window_ms    integer >= 1      the window's length in milliseconds
  [3] cost         integer >= 0      units this request takes (optional, default 1; <= limit);
                                     0 is a peek: nothing is consumed, written or counted
  [4] stats TTL    integer seconds   TTL of the telemetry counters (optional, default 120)
  [5] now_ms       integer ms or ""  optional: an explicit clock, for replays (see CLOCK MODE);
                                     absent or "" = the window is the key's lifetime

REPLY  {allowed, remaining, retry_after_ms, reset_after_ms}
  allowed         1 or 0; a denied cost is given back (DECRBY), so a rejected burst does not
                  inflate the counter
  remaining       units still admissible in this window after this decision
  retry_after_ms  0 when allowed, else the time left in the window + 1 ms: Redis expires a key
                  only once its last millisecond has passed (PTTL 0 is still a live window)
  reset_after_ms  the time left in the window (0 when no window is open)

INCRBY cost; the first increment of a window (a counter with no TTL) sets PEXPIRE window_ms.
The window is the key's lifetime, so the script needs no clock.

CLOCK MODE (ARGV[5] = now_ms): the same decisions on a clock the caller gives, so a log can be
replayed on its own timeline. KEYS[1] is then a hash {start, count}: the window opened at
`start` (a client's first request) and holds while now - start <= window_ms, exactly as long as
the TTL mode's key lives (Redis expires a key only once its last millisecond has passed); the
next request after that opens a new window at its own now. A clock that goes backwards stays in
the open window (elapsed time is clamped at zero) and never opens a new one. reset_after_ms is
start + window_ms - now (the TTL mode's PTTL), retry_after_ms that + 1, a denied cost is not
counted, and the PEXPIRE window_ms set when a window opens only evicts: a window the clock has
left is replaced whether or not its key is still there.

A KEY LEFT BY THE OTHER MODE (a hash {start, count} met without now_ms, an integer count met
with it: a simulation on the caller's clock, then a check on the server's) is read as this mode
reads its own, the window ending with the key's PTTL; a check (cost >= 1) first rewrites it in
this mode's form, keeping its count and its PTTL, and a peek writes nothing. Anything else at
the key is still the WRONGTYPE error it was.

EXAMPLE  (100 requests per 60 s)
  redis-cli EVAL "$(cat fixed_window.lua)" 1 ratelockr:fw:{api}:user42 100 60000
  1) (integer) 1    2) (integer) 99    3) (integer) 0    4) (integer) 60000
]]

-- The hot path is written for Redis's CPU (docs/benchmarks.md, "Redis CPU per decision"): the arguments are
-- checked with plain comparisons (x % 1 == 0 also rules out NaN and infinities), and only a
-- call with a bad one builds the helpers that name it. The cost and stats TTL the engine sends
-- ('1', '120') are recognised by a string comparison, cheaper than tonumber, and the cost goes
-- to INCRBY as the very string: a Lua number would be formatted by Redis on every call.
local nkeys = #KEYS
local limit, window = tonumber(ARGV[1]), tonumber(ARGV[2])
local cost_arg, stats_ttl = ARGV[3], ARGV[4]
local cost = 1
if cost_arg == '1' then
  -- As sent.
elseif cost_arg == nil or cost_arg == '' then
  cost_arg = '1'
else
  cost = tonumber(cost_arg)
  cost_arg = cost
end
if stats_ttl == '120' or stats_ttl == nil or stats_ttl == '' then stats_ttl = 120 else stats_ttl = tonumber(stats_ttl) end
if not ((nkeys == 1 or nkeys == 3)
    and limit and limit % 1 == 0 and limit >= 1 and limit <= 1e15
    and window and window % 1 == 0 and window >= 1 and window <= 1e15
    and cost and cost % 1 == 0 and cost >= 0 and cost <= limit
    and stats_ttl and stats_ttl % 1 == 0 and stats_ttl >= 1 and stats_ttl <= 1e15) then
  local function fail(msg)
    return redis.error_reply('ratelockr fixed_window: ' .. msg)
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
    return fail('expected 1 key (counter) or 3 (counter, allowed counter, denied counter), got ' .. nkeys)
  end
  local err
  limit, err = integer_arg(ARGV[1], 'limit', nil, 1)
  if not limit then return fail(err) end
  window, err = integer_arg(ARGV[2], 'window_ms', nil, 1)
  if not window then return fail(err) end
  cost, err = integer_arg(ARGV[3], 'cost', 1, 0)
  if not cost then return fail(err) end
  if cost > limit then
    return fail('cost ' .. cost .. ' exceeds limit ' .. limit .. ': such a request can never pass')
  end
  stats_ttl, err = integer_arg(ARGV[4], 'stats TTL', 120, 1)
  if not stats_ttl then return fail(err) end
  return fail('invalid arguments')
end

local key = KEYS[1]
local count, ttl
local now = ARGV[5]
local clock = now ~= nil and now ~= ''
if clock then
  now = tonumber(now)
  if not (now and now % 1 == 0 and now >= 0 and now <= 9007199254740992) then
    return redis.error_reply('ratelockr fixed_window: now_ms must be an integer >= 0 (at most 2^53) or "", got \''
      .. tostring(ARGV[5]) .. '\'')
  end
end

-- A key left by the other mode (see A KEY LEFT BY THE OTHER MODE) is met only after a pcall's
-- error; what reads and rewrites it is written out there, off the hot path (a helper function
-- here would be a closure built on every call). The blocks marked "shared" are policy.lua's text
-- too, kept identical by tests/engine/lua_blocks.rs.

if cost == 0 then
  -- A peek: what is left of this window; nothing written, nothing counted.
  local used, left = 0, 0
  if clock then
    local state = redis.pcall('HMGET', key, 'start', 'count')
    if state.err then
      -- The TTL mode's integer count? Any other error is raised as the call's own.
      local count = state.err:sub(1, 9) == 'WRONGTYPE' and tonumber(redis.call('GET', key))
      if not count or count % 1 ~= 0 then redis.call('HMGET', key, 'start', 'count') end
      local ttl = redis.call('PTTL', key)
      if ttl > 0 then used, left = count, ttl end
    else
      local start = tonumber(state[1])
      if start ~= nil and tonumber(state[2]) ~= nil and now - start <= window then
        used, left = tonumber(state[2]), start + window - math.max(now, start)
      end
    end
  else
    local value = redis.pcall('GET', key)
    if type(value) == 'table' and value.err then
      -- The clock mode's {start, count}? Any other error is raised as the call's own.
      -- shared: fixed_window.count_reads_a_window
      local state = value.err:sub(1, 9) == 'WRONGTYPE' and redis.call('HMGET', key, 'start', 'count')
      if not (state and tonumber(state[1]) and tonumber(state[2])) then redis.call('GET', key) end
      -- end shared
      left = redis.call('PTTL', key)
      if left > 0 then used = tonumber(state[2]) end
    else
      used = tonumber(value or '0')
      left = redis.call('PTTL', key)
    end
    if left < 0 then left = 0 end
  end
  return {1, math.floor(math.max(limit - used, 0)), 0, math.floor(left)}
end

if clock then
  local state = redis.pcall('HMGET', key, 'start', 'count')
  if state.err then
    -- The TTL mode's integer count: rewritten as {start, count} with its PTTL. Any other error
    -- is raised as the call's own.
    -- shared: fixed_window.clock_reads_a_count
    local count = state.err:sub(1, 9) == 'WRONGTYPE' and tonumber(redis.call('GET', key))
    if not count or count % 1 ~= 0 then redis.call('HMGET', key, 'start', 'count') end
    local left = redis.call('PTTL', key)
    -- end shared
    redis.call('DEL', key)
    if left > 0 then
      redis.call('HSET', key, 'start', now - (window - left), 'count', count)
      redis.call('PEXPIRE', key, left)
    end
    state = redis.call('HMGET', key, 'start', 'count')
  end
  -- A window the clock has left (or no window) is replaced; its key may not have expired yet.
  -- shared: fixed_window.clock_window
  local start, used = tonumber(state[1]), tonumber(state[2])
  local fresh = start == nil or used == nil or now - start > window
  if fresh then start, used = now, 0 end
  -- end shared
  ttl = start + window - now
  count = used + cost
  if fresh then
    -- cost <= limit, so the first request of a window is always admitted.
    redis.call('HSET', key, 'start', start, 'count', count)
    redis.call('PEXPIRE', key, window)
  elseif count <= limit then
    redis.call('HSET', key, 'count', count)
  end
else
  count = redis.pcall('INCRBY', key, cost_arg)
  if type(count) == 'table' then
    -- The clock mode's {start, count}: rewritten as an integer count with its PTTL. Any
    -- other error is raised as the call's own.
    local state = count.err:sub(1, 9) == 'WRONGTYPE' and redis.pcall('HMGET', key, 'start', 'count')
    if not state or state.err or not (tonumber(state[1]) and tonumber(state[2])) then
      redis.call('INCRBY', key, cost_arg)
    end
    local left = redis.call('PTTL', key)
    redis.call('DEL', key)
    if left > 0 then redis.call('SET', key, state[2], 'PX', left) end
    count = redis.call('INCRBY', key, cost_arg)
  end
  ttl = redis.call('PTTL', key)
  -- shared: fixed_window.ttl_repair
  if ttl < 0 then
    redis.call('PEXPIRE', key, window)
    ttl = window
  end
  -- end shared
end

local allowed, remaining, retry_after = 1, limit - count, 0
if remaining < 0 then
  -- The TTL mode gives the cost back; the clock mode never counted it.
  if not clock then redis.call('DECRBY', key, cost_arg) end
  allowed, remaining, retry_after = 0, remaining + cost, ttl + 1
  if remaining < 0 then remaining = 0 end
end

if nkeys == 3 then
  local counter = KEYS[3 - allowed]
  if redis.call('INCR', counter) == 1 then redis.call('EXPIRE', counter, stats_ttl) end
end

return {allowed, math.floor(remaining), math.floor(retry_after), math.floor(ttl)}
