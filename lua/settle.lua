--[[
ratelockr settle — charges an admitted request's actual cost in place of its estimate, in every
limit of its policy at once, atomically.

Why: a request may be charged an estimate (its cost) and settled when its actual cost is known,
the way LLM APIs meter tokens. The difference goes to every limit of the policy in one call:
  actual < charged  the unused part is given back, exactly as lua/refund.lua gives back a cost
                    (bounded by the state that is there: never more than a full allowance, and a
                    key that is gone gets nothing);
  actual > charged  the rest is charged as a charge of (actual - charged) at now would charge
                    it, but past the limit when need be: nothing is lost, the key then waits
                    longer (a token bucket's debt moves its last refill into the future; a TAT
                    moves further ahead; a log gets entries beyond its limit; a counter counts
                    beyond it);
  equal             nothing happens.
Settled at the moment of its charge, 1,000 settled to 640 leaves every limit exactly as a charge
of 640 would have, and 640 settled to 1,000 exactly as a charge of 1,000 (admitted) would have.
A concurrency (cc) limit is not charged by cost (a lease is one slot whatever the cost): it is
left alone and not counted. Settling a denied or peeked request is the caller's mistake: it
charged nothing, so there is nothing to settle (the engine never sends one).

KEYS
  [1] .. [n]  the limits' state keys, one per limit in ARGV's order (the keys lua/policy.lua was
              given: they share the policy's hash tag, so one slot)
  [n+1]       optional: this second's `settled` telemetry counter of the policy (or rule),
              <prefix>:stats:{<name>}:<second>:settled (the same hash tag): INCRed once when
              some limit changed (the reply > 0), with the TTL at ARGV[4n+7]

ARGV
  [1] n          integer 1..8      how many limits
  [2] now_ms     integer ms or ""  milliseconds since the epoch; "" = the Redis server's clock
  [3] charged    integer >= 0      the cost the request was decided with
  [4] actual     integer >= 0      its actual cost (both at most 10^15)
  [5] member     string            a unique id, fresh for this call (NOT the decision's member):
                                   the log's extra entries are member, member#2, ...; required
                                   when a limit is a sliding window log and actual > charged
  [6] fw clock   "1" or ""         when a fixed window's key is gone and the rest is charged,
                                   the window opened is the caller's-clock hash ("1") or the
                                   TTL counter (""), as lua/policy.lua's ARGV[7]; a key that is
                                   there keeps its own mode
  then four per limit i (ARGV[4i+3] .. ARGV[4i+6]): kind, then three parameters, as policy.lua
      tb  capacity (integer >= 1), refill per second (number > 0), ""
      gc  limit (integer >= 1), period_ms (integer >= 1), burst (integer >= 1)
      sw  limit, window_ms (integers >= 1), ""
      sc  limit, window_ms (integers >= 1), ""
      fw  limit, window_ms (integers >= 1), ""
      cc  limit, lease_ms (integers >= 1), ""   (left alone)
      cal limit (integer >= 1), windows ("b0,b1,...", as policy.lua's), ""
  [4n+7] stats_ttl_secs  integer >= 1, optional (default 120): the counter's TTL, with KEYS[n+1]

REPLY  how many limits were settled (changed): 0 when actual = charged, when every limit is cc,
       or when nothing was there to give back to.

Per kind, for the extra d = actual - charged > 0 (the give-back is refund.lua's, per kind):
  tb  refilled to now as a charge is, then tokens -= d; a bucket left below 0 tokens keeps its
      debt as time: last_refill moves ceil(debt / rate) ms ahead and tokens hold what that
      rounding over-refills (under 1 token up to 1,000 tokens a second; above, only its fraction
      is kept: the bucket may lose under 1 ms of refill, never gain). Its TTL covers the debt.
  gc  TAT = max(TAT, now) + d x T, exactly in the script's units (1/limit ms); PX until the TAT.
  sw  d entries at max(now, newest) after trimming the window, PEXPIRE window_ms.
  sc  the windows roll to now as a charge rolls them, then the current count += d.
  fw  the count += d (TTL counter: INCRBY; caller's clock: the hash's count); a window that is
      gone or over is opened with d, as a charge at now would open it.
  cal the window's count += d, in the window a charge at now counts in (calendar.lua's rule: a
      stored window not yet over keeps its count); a window that is gone is opened with d.

EXAMPLE  (a request decided with cost 1,000 by policy.lua, then settled: 640 used, 360 given
back to both limits; the daily count is then 640)
  redis-cli EVAL "$(cat policy.lua)" 2 ratelockr:tb:{llm}.per-minute:user42 \
      ratelockr:fw:{llm}.daily:user42 2 "" 1000 enforce 120 "" "" tb 100000 1666.7 "" \
      fw 1000000 86400000 ""
  1) (integer) 1    2) (integer) 99000    ...
  redis-cli EVAL "$(cat settle.lua)" 2 ratelockr:tb:{llm}.per-minute:user42 \
      ratelockr:fw:{llm}.daily:user42 2 "" 1000 640 "" "" tb 100000 1666.7 "" fw 1000000 86400000 ""
  (integer) 2
]]

local function fail(msg) return redis.error_reply('ratelockr settle: ' .. msg) end
local function show(v) return '\'' .. tostring(v) .. '\'' end
local function int(value, min, max) -- nil unless an integer in min .. max (NaN: x % 1 is NaN)
  local x = tonumber(value)
  if x and x % 1 == 0 and x >= min and x <= (max or 1e15) then return x end
end

local n = int(ARGV[1], 1, 8)
if not n then
  return fail('ARGV[1] n (the number of limits) must be an integer from 1 to 8, got ' .. show(ARGV[1]))
end
if #KEYS ~= n and #KEYS ~= n + 1 then
  return fail('expected ' .. n .. ' keys (one per limit, then optionally the settled counter), got ' .. #KEYS)
end
local counter_ttl = 120
if #KEYS == n + 1 and ARGV[4 * n + 7] ~= nil then
  counter_ttl = int(ARGV[4 * n + 7], 1, 1e9)
  if not counter_ttl then
    return fail('ARGV[' .. (4 * n + 7) .. '] stats_ttl_secs must be an integer >= 1, got ' .. show(ARGV[4 * n + 7]))
  end
end
local charged = int(ARGV[3], 0)
if not charged then return fail('ARGV[3] charged must be an integer >= 0, got ' .. show(ARGV[3])) end
local actual = int(ARGV[4], 0)
if not actual then return fail('ARGV[4] actual must be an integer >= 0, got ' .. show(ARGV[4])) end
local member = ARGV[5]
local fw_clock = ARGV[6] == '1'
if not (ARGV[6] == nil or ARGV[6] == '' or fw_clock) then
  return fail('ARGV[6] fw clock must be "1" or "", got ' .. show(ARGV[6]))
end
local delta = actual - charged

local names = {
  tb = {'token bucket', 'capacity', 'refill per second'},
  gc = {'gcra', 'limit', 'period_ms', 'burst'},
  sw = {'sliding window log', 'limit', 'window_ms'},
  sc = {'sliding window counter', 'limit', 'window_ms'},
  fw = {'fixed window', 'limit', 'window_ms'},
  cc = {'concurrency', 'limit', 'lease_ms'},
  cal = {'calendar', 'limit', 'windows'},
}
local limits = {}
for i = 1, n do
  local at = 4 * i + 3
  local kind = ARGV[at]
  local name = names[kind]
  if not name then
    return fail('limit ' .. i .. ': ARGV[' .. at .. '] kind must be tb, gc, sw, sc, fw, cc or cal, got ' .. show(kind))
  end
  local function param(j) return 'limit ' .. i .. ' (' .. name[1] .. '): ARGV[' .. (at + j) .. '] ' .. name[j + 1] end
  local a = int(ARGV[at + 1], 1)
  if not a then return fail(param(1) .. ' must be an integer >= 1, got ' .. show(ARGV[at + 1])) end
  local b
  if kind == 'tb' then
    b = tonumber(ARGV[at + 2])
    if b == nil or b ~= b or b <= 0 or b == math.huge then
      return fail(param(2) .. ' must be a number > 0 (tokens per second), got ' .. show(ARGV[at + 2]))
    end
  elseif kind == 'cal' then
    -- The windows: ascending integers; the one holding now is found before anything is written.
    b = {}
    for word in string.gmatch(ARGV[at + 2] or '', '[^,]+') do
      local t = int(word, 0, 9007199254740992)
      if not t or (#b > 0 and t <= b[#b]) then
        return fail(param(2) .. ' must be ascending integers (ms since the epoch) separated by commas, got '
          .. show(ARGV[at + 2]))
      end
      b[#b + 1] = t
    end
  else
    b = int(ARGV[at + 2], 1)
    if not b then return fail(param(2) .. ' must be an integer >= 1, got ' .. show(ARGV[at + 2])) end
    if kind == 'gc' then
      if not int(ARGV[at + 3], 1) then
        return fail(param(3) .. ' must be an integer >= 1, got ' .. show(ARGV[at + 3]))
      end
      if math.abs(delta) * b > 4503599627370496 then
        return fail(param(2) .. ': |actual - charged| x period_ms must be at most 2^52, got '
          .. string.format('%.17g', math.abs(delta) * b))
      end
    elseif kind == 'sw' and delta > 0 and (member == nil or member == '') then
      return fail('ARGV[5] member (a unique id for the extra entries) is required by limit ' .. i
        .. ' (' .. name[1] .. ') when actual > charged')
    end
  end
  limits[i] = {kind, a, b}
end

if delta == 0 then return 0 end

local now = ARGV[2]
if now == nil or now == '' then
  local t = redis.call('TIME')
  local us = t[2] + 0
  now = t[1] * 1000 + (us - us % 1000) / 1000
else
  now = tonumber(now)
  if not (now and now % 1 == 0 and now >= 0 and now <= 9007199254740992) then
    return fail('ARGV[2] now_ms must be an integer >= 0 (at most 2^53) or "", got ' .. show(ARGV[2]))
  end
end

-- Fields of an HMGET as numbers (nil where absent or not a number).
local function numbers_of(values)
  local out = {}
  for j = 1, #values do out[j] = tonumber(values[j]) end
  return out[1], out[2], out[3], out[4]
end

-- Exact decimal of an integer below 2^53 (%d), else %.17g: how the scripts write times.
local function exact(x)
  if x < 9007199254740992 and x > -9007199254740992 then return string.format('%d', x) end
  return string.format('%.17g', x)
end

-- Gives back `cost` to limit i as lua/refund.lua does for its kind, in refund.lua's own text
-- (the blocks marked shared, held one text by tests/engine/lua_blocks.rs): 1 when there was
-- state to give back to, else 0.
local function give_back(i, kind, a, b, cost)
  local key = KEYS[i]
  if kind == 'tb' then
    local capacity = a
    -- shared: refund.tb
    local state = redis.call('GET', key)
    if not state or #state ~= 16 then return 0 end
    local tokens, last = struct.unpack('<dd', state)
    redis.call('SET', key, struct.pack('<dd', math.min(capacity, tokens + cost), last), 'KEEPTTL')
    return 1
    -- end shared
  elseif kind == 'gc' then
    local limit, period = a, b
    -- shared: refund.gc
    local state = redis.call('GET', key)
    if not state or #state ~= 24 then return 0 end
    local tat_ms, frac, stored_limit = struct.unpack('<ddd', state)
    if stored_limit ~= limit then return 0 end
    -- cost x T ms = cost x period / limit ms = whole ms + rest / limit ms.
    local units = cost * period
    local rest = units % limit
    local whole = (units - rest) / limit
    frac = frac - rest
    if frac < 0 then
      frac = frac + limit
      whole = whole + 1
    end
    redis.call('SET', key, struct.pack('<ddd', tat_ms - whole, frac, limit), 'KEEPTTL')
    return 1
    -- end shared
  elseif kind == 'sw' then
    -- shared: refund.sw
    local popped = redis.call('ZPOPMAX', key, cost)
    if #popped == 0 then return 0 end
    return 1
    -- end shared
  elseif kind == 'sc' then
    -- shared: refund.sc
    local state = redis.call('HMGET', key, 'c', 'p')
    local current, previous = tonumber(state[1]), tonumber(state[2])
    if current == nil or previous == nil then return 0 end
    local from_current = math.min(current, cost)
    local from_previous = math.min(previous, cost - from_current)
    redis.call('HSET', key, 'c', current - from_current, 'p', previous - from_previous)
    return 1
    -- end shared
  elseif kind == 'fw' then
    -- shared: refund.fw
    local type = redis.call('TYPE', key)['ok']
    if type == 'string' then
      local used = tonumber(redis.call('GET', key))
      if used == nil or used <= 0 then return 0 end
      redis.call('DECRBY', key, math.min(used, cost))
      return 1
    elseif type == 'hash' then
      local used = tonumber(redis.call('HGET', key, 'count'))
      if used == nil or used <= 0 then return 0 end
      redis.call('HSET', key, 'count', used - math.min(used, cost))
      return 1
    end
    return 0
    -- end shared
  elseif kind == 'cal' then
    -- shared: refund.cal
    local state = redis.call('GET', key)
    if not state or #state ~= 24 then return 0 end
    local s, e, used = struct.unpack('<ddd', state)
    if not (used and used > 0) then return 0 end
    redis.call('SET', key, struct.pack('<ddd', s, e, used - math.min(used, cost)), 'KEEPTTL')
    return 1
    -- end shared
  end
  return 0
end

-- Charges limit i `d` more as a charge at now would, past the limit when need be.
local function charge_rest(i, kind, a, b, d)
  local key = KEYS[i]
  if kind == 'tb' then
    local capacity, rate = a, b
    local state = redis.call('GET', key)
    local tokens, last = capacity, now
    if state then
      if #state == 16 then tokens, last = struct.unpack('<dd', state) end
      if tokens == nil or tokens ~= tokens or last % 1 ~= 0 then
        return fail(key .. ' holds ' .. #state .. ' bytes that are not a bucket')
      end
    end
    local elapsed = now - last
    if elapsed > 0 then
      tokens = tokens + elapsed * rate / 1000
      if tokens > capacity then tokens = capacity end
    end
    if now > last then last = now end
    tokens = tokens - d
    if tokens < 0 then
      -- The debt as time: the least whole ms k after which the refill covers it.
      local k = -tokens * 1000 / rate
      local fraction = k % 1
      if fraction > 0 then k = k - fraction + 1 end
      while k > 1 and tokens + (k - 1) * rate / 1000 >= 0 do k = k - 1 end
      while tokens + k * rate / 1000 < 0 do k = k + 1 end
      tokens = tokens + k * rate / 1000
      if tokens >= 1 then tokens = tokens % 1 end
      last = last + k
    end
    local fill_ms = capacity * 1000 / rate * 2
    fill_ms = fill_ms - fill_ms % 1 + 1000
    local ahead = last - now
    if ahead < 0 then ahead = 0 end
    redis.call('SET', key, struct.pack('<dd', tokens, last), 'PX', exact(fill_ms + ahead))
  elseif kind == 'gc' then
    local limit, period = a, b
    local state = redis.call('GET', key)
    local tat_ms, frac = now, 0
    if state then
      local stored_limit
      if #state == 24 then tat_ms, frac, stored_limit = struct.unpack('<ddd', state) end
      if not (tat_ms and tat_ms % 1 == 0 and frac % 1 == 0 and frac >= 0 and stored_limit >= 1
          and frac < stored_limit) then
        return fail(key .. ' holds ' .. #state .. ' bytes that are not a TAT')
      end
      if stored_limit ~= limit and frac > 0 then tat_ms, frac = tat_ms + 1, 0 end
    end
    if tat_ms < now then tat_ms, frac = now, 0 end
    local units = d * period
    local rest = units % limit
    local whole = (units - rest) / limit
    frac = frac + rest
    if frac >= limit then
      frac = frac - limit
      whole = whole + 1
    end
    tat_ms = tat_ms + whole
    local ttl = tat_ms - now
    if frac > 0 then ttl = ttl + 1 end
    if ttl < 1 then ttl = 1 end
    redis.call('SET', key, struct.pack('<ddd', tat_ms, frac, limit), 'PX', exact(ttl))
  elseif kind == 'sw' then
    local window = b
    local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
    local at = now
    if newest[2] ~= nil then
      local score = tonumber(newest[2])
      if score > now then at = score end
    end
    redis.call('ZREMRANGEBYSCORE', key, '-inf', exact(at - window))
    local args = {at, member}
    for j = 2, d do
      args[#args + 1] = at
      args[#args + 1] = member .. '#' .. j
      if #args >= 2000 then
        redis.call('ZADD', key, (table.unpack or unpack)(args))
        args = {}
      end
    end
    if #args > 0 then redis.call('ZADD', key, (table.unpack or unpack)(args)) end
    redis.call('PEXPIRE', key, window)
  elseif kind == 'sc' then
    local window = b
    local state = redis.call('HMGET', key, 'w', 'c', 'p', 't')
    local at = now
    local stored_index, current, previous = nil, 0, 0
    if state[1] then
      local w, c, p, t = tonumber(state[1]), tonumber(state[2]), tonumber(state[3]), tonumber(state[4])
      if not (w and c and p and t and w % 1 == 0 and c % 1 == 0 and p % 1 == 0 and t % 1 == 0
          and c >= 0 and p >= 0) then
        return fail(key .. ' is not a counter hash (fields w, c, p, t: integers)')
      end
      if t > at then at = t end
      stored_index, current, previous = w, c, p
    end
    local index = at / window
    index = index - index % 1
    local elapsed = at - index * window
    if elapsed < 0 then
      index = index - 1
    elseif elapsed >= window then
      index = index + 1
    end
    local same_window = stored_index == index
    if stored_index ~= nil and stored_index < index then
      if stored_index == index - 1 then previous = current else previous = 0 end
      current = 0
    end
    current = current + d
    if same_window then
      redis.call('HSET', key, 'c', current, 't', exact(at))
    else
      redis.call('HSET', key, 'w', exact(index), 'c', current, 'p', previous, 't', exact(at))
    end
    redis.call('PEXPIRE', key, 2 * window)
  elseif kind == 'fw' then
    local window = b
    local type = redis.call('TYPE', key)['ok']
    if type == 'string' then
      if not tonumber(redis.call('GET', key)) then
        return fail(key .. ' holds ' .. show(redis.call('GET', key)) .. ', not a fixed window\'s integer count')
      end
      redis.call('INCRBY', key, d)
      if redis.call('PTTL', key) < 0 then redis.call('PEXPIRE', key, window) end
    elseif type == 'hash' then
      local state = redis.call('HMGET', key, 'start', 'count')
      local start, used = tonumber(state[1]), tonumber(state[2])
      if start == nil or used == nil or now - start > window then
        redis.call('HSET', key, 'start', exact(now), 'count', d)
        redis.call('PEXPIRE', key, window)
      else
        redis.call('HSET', key, 'count', used + d)
      end
    elseif type == 'none' then
      if fw_clock then
        redis.call('HSET', key, 'start', exact(now), 'count', d)
        redis.call('PEXPIRE', key, window)
      else
        redis.call('SET', key, d, 'PX', window)
      end
    else
      return fail(key .. ' is a ' .. type .. ', not a fixed window')
    end
  elseif kind == 'cal' then
    -- b: {start, finish} of the window holding now (found before anything was written).
    local start, finish, used = b[1], b[2], 0
    local state = redis.call('GET', key)
    if state then
      local s, e, c = struct.unpack('<ddd', state)
      if e > start then
        used = c
        if s > start then start, finish = s, e end
      end
    end
    -- Until the window ends on the Redis clock; on a caller's clock, for its length (as calendar.lua).
    local ttl = finish - now
    if ARGV[2] ~= nil and ARGV[2] ~= '' then ttl = finish - start end
    redis.call('SET', key, struct.pack('<ddd', start, finish, used + d), 'PX', string.format('%d', ttl))
  end
  return nil
end

-- Every key is read before any is written: a key that holds something else fails the call
-- with nothing settled anywhere (all or nothing, as the decision).
local holds = {tb = 'string', gc = 'string', sw = 'zset', sc = 'hash', fw = 'string', cal = 'string'}
for i = 1, n do
  local kind, key = limits[i][1], KEYS[i]
  local type = kind ~= 'cc' and redis.call('TYPE', key)['ok']
  if type and type ~= 'none' and type ~= holds[kind] and not (kind == 'fw' and type == 'hash') then
    return fail(key .. ' is a ' .. type .. ', not the state of a ' .. names[kind][1])
  end
  local bad = false
  if kind == 'cal' then
    -- The window that holds now, in place of the list.
    local edges, window = limits[i][3], nil
    for j = 1, #edges - 1 do
      if edges[j] <= now and now < edges[j + 1] then window = {edges[j], edges[j + 1]} end
    end
    if not window then
      return fail('limit ' .. i .. ' (calendar): the time ' .. exact(now)
        .. ' lies outside the windows given: the caller\'s clock is further from this one than its windows reach')
    end
    limits[i][3] = window
  end
  if type == 'string' and kind == 'cal' then
    local state = redis.call('GET', key)
    local s, e, c
    if #state == 24 then s, e, c = struct.unpack('<ddd', state) end
    bad = not (s and s % 1 == 0 and e % 1 == 0 and c % 1 == 0 and c >= 0 and e > s)
  elseif type == 'string' and (kind == 'tb' or kind == 'gc') then
    local state = redis.call('GET', key)
    if kind == 'tb' then
      local tokens, last
      if #state == 16 then tokens, last = struct.unpack('<dd', state) end
      bad = tokens == nil or tokens ~= tokens or last % 1 ~= 0
    else
      local tat_ms, frac, stored_limit
      if #state == 24 then tat_ms, frac, stored_limit = struct.unpack('<ddd', state) end
      bad = not (tat_ms and tat_ms % 1 == 0 and frac % 1 == 0 and frac >= 0 and stored_limit >= 1
        and frac < stored_limit)
    end
  elseif type == 'string' then
    local count = tonumber(redis.call('GET', key))
    bad = count == nil or count % 1 ~= 0
  elseif type == 'hash' and kind == 'sc' then
    local w, c, p, t = numbers_of(redis.call('HMGET', key, 'w', 'c', 'p', 't'))
    bad = not (w and c and p and t and w % 1 == 0 and c % 1 == 0 and p % 1 == 0 and t % 1 == 0
      and c >= 0 and p >= 0)
  elseif type == 'hash' then
    local start, count = numbers_of(redis.call('HMGET', key, 'start', 'count'))
    bad = not (start and count and start % 1 == 0 and count % 1 == 0)
  end
  if bad then return fail(key .. ' does not hold the state of a ' .. names[kind][1]) end
end

local settled = 0
for i = 1, n do
  local kind, a, b = limits[i][1], limits[i][2], limits[i][3]
  if kind ~= 'cc' then
    if delta < 0 then
      settled = settled + give_back(i, kind, a, b, -delta)
    else
      local err = charge_rest(i, kind, a, b, delta)
      if err then return err end
      settled = settled + 1
    end
  end
end
if #KEYS == n + 1 and settled > 0 then
  if redis.call('INCR', KEYS[n + 1]) == 1 then redis.call('EXPIRE', KEYS[n + 1], counter_ttl) end
end
return settled
