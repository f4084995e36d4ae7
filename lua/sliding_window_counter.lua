--[[
ratelockr sliding window counter — one atomic rate-limit decision.

The two-counter approximation of a sliding window: the previous window's count, weighted by
how much of it the sliding window still covers, plus this window's count:

  estimate = previous x (window_ms - elapsed) / window_ms + current

A request passes when estimate + cost <= limit. Windows are aligned to multiples of window_ms
since the epoch (index = floor(now / window_ms), elapsed = now - index x window_ms). It assumes
the previous window's requests were spread evenly, so it can admit a little more or less than
the exact sliding log on the same traffic (`simulate` reports by how much); in exchange it keeps
two integers per client instead of one entry per request. Redis runs a script on one thread, so
estimating and counting cannot interleave with another client's call.

The arithmetic is exact: the estimate is compared in integer units of 1/window_ms request, and
every quantity stays below 2^53 (hence limit x window_ms <= 2^52).

KEYS
  [1] the counters: a hash with fields w (this window's index), c (its count), p (the previous
      window's count) and t (the latest now_ms seen); absent = no requests
  [2] optional: the telemetry counter of allowed decisions (INCR'd when allowed)
  [3] optional: the telemetry counter of denied decisions (INCR'd when denied)
      KEYS[2] and KEYS[3] go together; give both or neither.

ARGV
  [1] limit        integer >= 1      requests admitted per sliding window
  [2] window_ms    integer >= 1      the window's length in milliseconds (limit x it <= 2^52)
  [3] now_ms       integer ms or ""  milliseconds since the epoch; "" = the Redis server's clock
  [4] cost         integer >= 0      units this request takes (optional, default 1; <= limit);
                                     0 is a peek: nothing is consumed, written or counted
  [5] stats TTL    integer seconds   TTL of the telemetry counters (optional, default 120)

REPLY  {allowed, remaining, retry_after_ms, reset_after_ms}
  allowed         1 or 0; a denied request is not counted
  remaining       whole requests that could still pass now: floor(limit - estimate)
  retry_after_ms  0 when allowed, else the exact wait after which this cost passes
  reset_after_ms  the wait until the estimate is 0: the end of the window after the newest
                  count's

Both waits are measured from the caller's now_ms. A clock that goes backwards mints nothing:
`now` is never taken earlier than the latest one seen (t), so neither the window nor the
weight can move back. Only an admission writes (HSET, then PEXPIRE 2 x window_ms: after that
both counts are stale and an absent key is exactly the same state). Redis work: TIME, HMGET,
and HSET + PEXPIRE on admission only.

EXAMPLE  (10 per 1000 ms, now_ms 1700000000250, cost 1)
  redis-cli EVAL "$(cat sliding_window_counter.lua)" 1 ratelockr:sc:{api}:user42 10 1000 1700000000250 1
  1) (integer) 1    2) (integer) 9    3) (integer) 0    4) (integer) 1750
]]

-- The hot path is written for Redis's CPU (docs/benchmarks.md, "Redis CPU per decision"): the arguments are
-- checked with plain comparisons (x % 1 == 0 also rules out NaN and infinities), and only a
-- call with a bad one builds the helpers that name it; the cost and stats TTL the engine sends
-- ('1', '120') are recognised by a string comparison, cheaper than tonumber; no closure is
-- built per call, and an admission rewrites only the fields that changed.
local nkeys = #KEYS
local limit, window = tonumber(ARGV[1]), tonumber(ARGV[2])
local cost, stats_ttl = ARGV[4], ARGV[5]
if cost == '1' or cost == nil or cost == '' then cost = 1 else cost = tonumber(cost) end
if stats_ttl == '120' or stats_ttl == nil or stats_ttl == '' then stats_ttl = 120 else stats_ttl = tonumber(stats_ttl) end
if not ((nkeys == 1 or nkeys == 3)
    and limit and limit % 1 == 0 and limit >= 1 and limit <= 1e15
    and window and window % 1 == 0 and window >= 1 and window <= 1e15
    and limit * window <= 4503599627370496
    and cost and cost % 1 == 0 and cost >= 0 and cost <= limit
    and stats_ttl and stats_ttl % 1 == 0 and stats_ttl >= 1 and stats_ttl <= 1e15) then
  local function fail(msg)
    return redis.error_reply('ratelockr sliding_window_counter: ' .. msg)
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
    return fail('expected 1 key (counters) or 3 (counters, allowed counter, denied counter), got ' .. nkeys)
  end
  local err
  limit, err = integer_arg(ARGV[1], 'limit', nil, 1)
  if not limit then return fail(err) end
  window, err = integer_arg(ARGV[2], 'window_ms', nil, 1)
  if not window then return fail(err) end
  if limit * window > 4503599627370496 then
    return fail('limit x window_ms must be at most 2^52 (4503599627370496) so that the arithmetic stays exact, got '
      .. string.format('%.17g', limit * window))
  end
  cost, err = integer_arg(ARGV[4], 'cost', 1, 0)
  if not cost then return fail(err) end
  if cost > limit then
    return fail('cost ' .. cost .. ' exceeds limit ' .. limit .. ': such a request can never pass')
  end
  stats_ttl, err = integer_arg(ARGV[5], 'stats TTL', 120, 1)
  if not stats_ttl then return fail(err) end
  return fail('invalid arguments')
end

local now = ARGV[3]
if now == nil or now == '' then
  local t = redis.call('TIME')
  -- TIME gives seconds and microseconds as strings; Lua's arithmetic reads them as numbers,
  -- once each.
  local us = t[2] + 0
  now = t[1] * 1000 + (us - us % 1000) / 1000
else
  now = tonumber(now)
  if not (now and now % 1 == 0 and now >= 0 and now <= 9007199254740992) then
    return redis.error_reply('ratelockr sliding_window_counter: now_ms must be an integer >= 0 (at most 2^53) or "", got \''
      .. tostring(ARGV[3]) .. '\'')
  end
end

-- Floor division of integers below 2^53, exact, written out where it is needed (a helper
-- function would be a closure built on every call): q = a / b; q = q - q % 1 is the floor of
-- the double quotient, which may round across an integer; the remainder r = a - q * b says
-- so, and one step puts q and r right.
local key = KEYS[1]
local err_prefix = 'ratelockr sliding_window_counter: '
-- The blocks marked "shared" are policy.lua's text too, kept identical by tests/engine/lua_blocks.rs.
-- shared: sliding_window_counter.read
local state = redis.call('HMGET', key, 'w', 'c', 'p', 't')
local at = now
local stored_index, current, previous = nil, 0, 0
if state[1] then
  local w, c, p, t = tonumber(state[1]), tonumber(state[2]), tonumber(state[3]), tonumber(state[4])
  if not (w and c and p and t and w % 1 == 0 and c % 1 == 0 and p % 1 == 0 and t % 1 == 0
      and c >= 0 and p >= 0) then
    return redis.error_reply(err_prefix .. key
      .. ' is not a counter hash (fields w, c, p, t: integers)')
  end
  if t > at then at = t end
  stored_index, current, previous = w, c, p
end
local index = at / window
index = index - index % 1
local elapsed = at - index * window
if elapsed < 0 then
  index, elapsed = index - 1, elapsed + window
elseif elapsed >= window then
  index, elapsed = index + 1, elapsed - window
end
local same_window = stored_index == index -- w and p stay as they are
if stored_index ~= nil and stored_index < index then
  -- The stored window is over: it becomes the previous one, or is too old to count at all.
  if stored_index == index - 1 then previous = current else previous = 0 end
  current = 0
end
-- The estimate in units of 1/window request: previous x (window - elapsed) + current x window.
local used = previous * (window - elapsed) + current * window
local yes = used <= (limit - cost) * window
-- end shared

local charge = cost > 0
local allowed, remaining, retry_after, reset_after = 0, 0, 0, 0
if yes then allowed = 1 end
-- shared: sliding_window_counter.decide
local behind = at - now -- how far the caller's clock lags the stored one
if yes then
  if charge then
    current = current + cost
    used = used + cost * window
    -- Written exactly: %d gives the digits %.17g would for an integer below 2^53, for less
    -- work (Lua's own tostring has 14 digits, too few for every ms). In the same window only
    -- the count and the latest clock change.
    local form = '%d'
    if at >= 9007199254740992 or at <= -9007199254740992 then form = '%.17g' end
    if same_window then
      redis.call('HSET', key, 'c', current, 't', string.format(form, at))
    else
      redis.call('HSET', key, 'w', string.format(form, index), 'c', current, 'p', previous,
        't', string.format(form, at))
    end
    redis.call('PEXPIRE', key, 2 * window)
  end
else
  -- In this window the previous count's weight falls by `previous` units per ms.
  local need = used - (limit - cost) * window
  local wait
  if previous > 0 then
    -- ceil(need / previous)
    local q = need / previous
    q = q - q % 1
    local r = need - q * previous
    if r < 0 then q, r = q - 1, r + previous elseif r >= previous then q, r = q + 1, r - previous end
    if r > 0 then q = q + 1 end
    if elapsed + q < window then wait = q end
  end
  if wait == nil then
    -- Next window: this window's count becomes the previous one, weighted down from 1.
    local excess = (current + cost - limit) * window
    local into = 0
    if excess > 0 then
      -- ceil(excess / current)
      into = excess / current
      into = into - into % 1
      local r = excess - into * current
      if r < 0 then into, r = into - 1, r + current elseif r >= current then into, r = into + 1, r - current end
      if r > 0 then into = into + 1 end
    end
    wait = window - elapsed + into
  end
  retry_after = behind + wait
end
if used < limit * window then
  -- floor((limit x window - used) / window)
  local left = limit * window - used
  remaining = left / window
  remaining = remaining - remaining % 1
  local r = left - remaining * window
  if r < 0 then remaining = remaining - 1 elseif r >= window then remaining = remaining + 1 end
end
if current > 0 then
  reset_after = behind + 2 * window - elapsed
elseif previous > 0 then
  reset_after = behind + window - elapsed
end
-- end shared

if nkeys == 3 and cost > 0 then
  local counter = KEYS[3 - allowed]
  if redis.call('INCR', counter) == 1 then redis.call('EXPIRE', counter, stats_ttl) end
end

return {allowed, math.floor(remaining), math.floor(retry_after), math.floor(reset_after)}
