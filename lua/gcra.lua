--[[
ratelockr GCRA (generic cell rate algorithm) — one atomic rate-limit decision.

One number of state per client, the theoretical arrival time (TAT): when the client's allowance
would be back to full if it sent nothing more. Each admission pushes the TAT one emission
interval T = period_ms / limit per unit of cost; a request passes when the TAT it would push to
lies no more than burst x T ahead of now. With burst = limit it admits exactly what a token
bucket of capacity `limit` refilling `limit` per period admits. Redis runs a script on one
thread, so reading and pushing the TAT cannot interleave with another client's call.

The arithmetic is exact: time is counted in integer units of 1/limit ms, in which T is the
integer period_ms, and every quantity stays below 2^53 (hence burst x period_ms <= 2^52), so
Lua's doubles hold it without rounding. No drift accumulates, and the waits are exact.

KEYS
  [1] the TAT: a 24-byte string, struct.pack('<ddd', tat_ms, frac, limit): three little-endian
      doubles holding integers, TAT = tat_ms + frac / limit ms (0 <= frac < limit); absent = a
      full allowance. Stored under another limit, the TAT is rounded up to a whole ms.
  [2] optional: the telemetry counter of allowed decisions (INCR'd when allowed)
  [3] optional: the telemetry counter of denied decisions (INCR'd when denied)
      KEYS[2] and KEYS[3] go together; give both or neither.
  [4] optional, with [2] and [3]: the counter of delayed admissions (INCR'd instead of [2] when
      admitted with delay_ms > 0; without it they count as allowed)

ARGV
  [1] limit        integer >= 1      requests per period (the long-run rate)
  [2] period_ms    integer >= 1      the period in milliseconds
  [3] burst        integer >= 1      how many may pass at once (burst x period_ms <= 2^52)
  [4] now_ms       integer ms or ""  milliseconds since the epoch; "" = the Redis server's clock
  [5] cost         integer >= 0      units this request takes (optional, default 1; <= burst);
                                     0 is a peek: nothing is consumed, written or counted
  [6] stats TTL    integer seconds   TTL of the telemetry counters (optional, default 120)
  [7] max_delay_ms integer >= 0      optional: delay instead of deny. A request that would pass
                                     within max_delay_ms is admitted now with delay_ms, the
                                     wait, and pushes the TAT as though it arrived delay_ms
                                     later (the caller waits that long, then serves); one that
                                     would wait longer is denied and pushes nothing.
                                     burst x period_ms + max_delay_ms x limit <= 2^52.
                                     Given (even "0" or ""), the reply has a 5th integer.

REPLY  {allowed, remaining, retry_after_ms, reset_after_ms}, and delay_ms when ARGV[7] is given
  allowed         1 or 0; a denied request pushes nothing
  remaining       whole requests that could still pass now (floor)
  retry_after_ms  0 when allowed, else the exact wait (rounded up) after which this cost passes
  reset_after_ms  the wait until the allowance is full again, ceil(TAT - now)
  delay_ms        0, or the wait before an admitted request may start; with max_delay_ms a
                  delayed admission leaves remaining 0, and a denial's retry_after_ms is the
                  wait until the request would pass delayed by max_delay_ms at most

With t = max(TAT, now): admit iff t + cost x T - now <= burst x T, then TAT = t + cost x T.
Both waits are measured from the caller's now_ms. A clock that goes backwards mints nothing:
it only makes the TAT look further ahead. Only an admission writes: one SET of the new TAT with
PX ceil(TAT - now), so an idle key evicts itself exactly when it would read as full.
Redis work: TIME, GET, and SET on admission only.

EXAMPLE  (10 per 1000 ms, bursts of 5, server clock, cost 1)
  redis-cli EVAL "$(cat gcra.lua)" 1 ratelockr:gc:{api}:user42 10 1000 5 "" 1
  1) (integer) 1    2) (integer) 4    3) (integer) 0    4) (integer) 100
]]

-- The hot path is written for Redis's CPU (docs/benchmarks.md, "Redis CPU per decision"): the arguments are
-- checked with plain comparisons (x % 1 == 0 also rules out NaN and infinities), and only a
-- call with a bad one builds the helpers that name it; the cost and stats TTL the engine sends
-- ('1', '120') are recognised by a string comparison, cheaper than tonumber; no closure is
-- built per call.
local nkeys = #KEYS
local limit, period, burst = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local cost, stats_ttl = ARGV[5], ARGV[6]
local max_delay, delaying = ARGV[7], ARGV[7] ~= nil
if max_delay == nil or max_delay == '' or max_delay == '0' then max_delay = 0 else max_delay = tonumber(max_delay) end
if cost == '1' or cost == nil or cost == '' then cost = 1 else cost = tonumber(cost) end
if stats_ttl == '120' or stats_ttl == nil or stats_ttl == '' then stats_ttl = 120 else stats_ttl = tonumber(stats_ttl) end
if not ((nkeys == 1 or nkeys == 3 or nkeys == 4)
    and limit and limit % 1 == 0 and limit >= 1 and limit <= 1e15
    and period and period % 1 == 0 and period >= 1 and period <= 1e15
    and burst and burst % 1 == 0 and burst >= 1 and burst <= 1e15
    and burst * period <= 4503599627370496
    and cost and cost % 1 == 0 and cost >= 0 and cost <= burst
    and stats_ttl and stats_ttl % 1 == 0 and stats_ttl >= 1 and stats_ttl <= 1e15
    and max_delay and max_delay % 1 == 0 and max_delay >= 0
    and burst * period + max_delay * limit <= 4503599627370496) then
  local function fail(msg)
    return redis.error_reply('ratelockr gcra: ' .. msg)
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

  if nkeys ~= 1 and nkeys ~= 3 and nkeys ~= 4 then
    return fail('expected 1 key (TAT), 3 (TAT, allowed counter, denied counter) or 4 (and delayed counter), got ' .. nkeys)
  end
  local err
  limit, err = integer_arg(ARGV[1], 'limit', nil, 1)
  if not limit then return fail(err) end
  period, err = integer_arg(ARGV[2], 'period_ms', nil, 1)
  if not period then return fail(err) end
  burst, err = integer_arg(ARGV[3], 'burst', nil, 1)
  if not burst then return fail(err) end
  if burst * period > 4503599627370496 then
    return fail('burst x period_ms must be at most 2^52 (4503599627370496) so that the arithmetic stays exact, got '
      .. string.format('%.17g', burst * period))
  end
  cost, err = integer_arg(ARGV[5], 'cost', 1, 0)
  if not cost then return fail(err) end
  if cost > burst then
    return fail('cost ' .. cost .. ' exceeds burst ' .. burst .. ': such a request can never pass')
  end
  stats_ttl, err = integer_arg(ARGV[6], 'stats TTL', 120, 1)
  if not stats_ttl then return fail(err) end
  max_delay, err = integer_arg(ARGV[7], 'max_delay_ms', 0, 0)
  if not max_delay then return fail(err) end
  if burst * period + max_delay * limit > 4503599627370496 then
    return fail('burst x period_ms + max_delay_ms x limit must be at most 2^52 (4503599627370496), got '
      .. string.format('%.17g', burst * period + max_delay * limit))
  end
  return fail('invalid arguments')
end

local now = ARGV[4]
if now == nil or now == '' then
  local t = redis.call('TIME')
  -- TIME gives seconds and microseconds as strings; Lua's arithmetic reads them as numbers,
  -- once each.
  local us = t[2] + 0
  now = t[1] * 1000 + (us - us % 1000) / 1000
else
  now = tonumber(now)
  if not (now and now % 1 == 0 and now >= 0 and now <= 9007199254740992) then
    return redis.error_reply('ratelockr gcra: now_ms must be an integer >= 0 (at most 2^53) or "", got \''
      .. tostring(ARGV[4]) .. '\'')
  end
end

-- Floor division of integers below 2^53, exact, written out where it is needed (a helper
-- function would be a closure built on every call): q = a / b; q = q - q % 1 is the floor of
-- the double quotient, which may round across an integer; the remainder r = a - q * b says
-- so, and one step puts q and r right.
local key = KEYS[1]
local err_prefix = 'ratelockr gcra: '
-- The blocks marked "shared" are policy.lua's text too, kept identical by tests/engine/lua_blocks.rs.
-- shared: gcra.read
local span = burst * period -- burst x T, in units of 1/limit ms
local tat_ms, frac
local state = redis.call('GET', key)
if state then
  local stored_limit
  if #state == 24 then tat_ms, frac, stored_limit = struct.unpack('<ddd', state) end
  if not (tat_ms and tat_ms % 1 == 0 and frac % 1 == 0 and frac >= 0 and stored_limit >= 1
      and frac < stored_limit) then
    return redis.error_reply(err_prefix .. key .. ' holds ' .. #state
      .. ' bytes that are not a TAT (24 bytes: tat_ms, frac, limit, little-endian doubles)')
  end
  -- Another limit's units: round the TAT up to a whole ms, which mints nothing.
  if stored_limit ~= limit and frac > 0 then tat_ms, frac = tat_ms + 1, 0 end
end
-- diff = max(TAT - now, 0) in units; far ahead (a caller's clock far behind) in whole ms
-- instead, where it could exceed 2^53 units; such a request is denied anyway (a delayed
-- admission may push the TAT max_delay ms further: that is not far).
local ahead, diff, far = 0, 0, false
if tat_ms and tat_ms >= now then
  ahead = tat_ms - now
  if ahead <= span / limit + max_delay + 2 then diff = ahead * limit + frac else far = true end
end
local yes = not far and diff <= (burst - cost) * period
-- end shared
-- shared: gcra.delay
-- Delay instead of deny: the wait after which this cost passes, ceil((diff + cost x T - span)
-- / limit), when it may be within max_delay (far ahead never is).
local delay = 0
if not yes and max_delay > 0 then
  delay = max_delay + 1
  if not far then
    local need = diff + cost * period - span
    local q = need / limit
    q = q - q % 1
    local r = need - q * limit
    if r < 0 then q, r = q - 1, r + limit elseif r >= limit then q, r = q + 1, r - limit end
    if r > 0 then q = q + 1 end
    delay = q
  end
end
-- end shared
-- Admitted `delay` ms from now: the TAT is pushed as though the request arrived then,
-- t = max(TAT, now + delay).
if delay > 0 and delay <= max_delay then
  yes = true
  if diff < delay * limit then diff = delay * limit end
else
  delay = 0
end

local charge = cost > 0
local allowed, remaining, retry_after, reset_after = 0, 0, 0, 0
if yes then allowed = 1 end
-- An admission's TTL is sent as text made here (%d: cheaper than the %.17g Redis applies to a
-- Lua number, the same digits for an integer below 2^53, as every quantity here is).
-- shared: gcra.decide
if yes then
  if charge then diff = diff + cost * period end
  -- reset_after = ceil(diff / limit), and the new TAT = now + whole + rest / limit ms.
  local whole = diff / limit
  whole = whole - whole % 1
  local rest = diff - whole * limit
  if rest < 0 then
    whole, rest = whole - 1, rest + limit
  elseif rest >= limit then
    whole, rest = whole + 1, rest - limit
  end
  reset_after = whole
  if rest > 0 then reset_after = whole + 1 end
  if charge then
    redis.call('SET', key, struct.pack('<ddd', now + whole, rest, limit), 'PX',
      string.format('%d', reset_after))
  end
  -- remaining = floor((span - diff) / period)
  local left = span - diff
  remaining = left / period
  remaining = remaining - remaining % 1
  local r = left - remaining * period
  if r < 0 then remaining = remaining - 1 elseif r >= period then remaining = remaining + 1 end
elseif not far then
  if diff < span then
    local left = span - diff
    remaining = left / period
    remaining = remaining - remaining % 1
    local r = left - remaining * period
    if r < 0 then remaining = remaining - 1 elseif r >= period then remaining = remaining + 1 end
  end
  -- The least whole ms w with diff - w x limit <= span - cost x T: ceil(need / limit).
  local need = diff + cost * period - span
  local q = need / limit
  q = q - q % 1
  local r = need - q * limit
  if r < 0 then q, r = q - 1, r + limit elseif r >= limit then q, r = q + 1, r - limit end
  retry_after = q
  if r > 0 then retry_after = q + 1 end
  q = diff / limit
  q = q - q % 1
  r = diff - q * limit
  if r < 0 then q, r = q - 1, r + limit elseif r >= limit then q, r = q + 1, r - limit end
  reset_after = q
  if r > 0 then reset_after = q + 1 end
else
  local need = frac + cost * period - span
  local q = need / limit
  q = q - q % 1
  local r = need - q * limit
  if r < 0 then q, r = q - 1, r + limit elseif r >= limit then q, r = q + 1, r - limit end
  retry_after = ahead + q
  if r > 0 then retry_after = retry_after + 1 end
  reset_after = ahead
  if frac > 0 then reset_after = ahead + 1 end
end
-- end shared

-- A denial under max_delay: the wait until the request would pass, delayed by max_delay.
if allowed == 0 and max_delay > 0 then retry_after = retry_after - max_delay end
if remaining < 0 then remaining = 0 end -- a delayed admission: nothing passes now

if nkeys >= 3 and cost > 0 then
  local counter = KEYS[3 - allowed]
  if delay > 0 and nkeys == 4 then counter = KEYS[4] end
  if redis.call('INCR', counter) == 1 then redis.call('EXPIRE', counter, stats_ttl) end
end

if delaying then
  return {allowed, math.floor(remaining), math.floor(retry_after), math.floor(reset_after), math.floor(delay)}
end
return {allowed, math.floor(remaining), math.floor(retry_after), math.floor(reset_after)}
