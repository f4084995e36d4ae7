--[[
ratelockr calendar quota — one atomic decision: at most `limit` per calendar hour, day, week or
month in a time zone ("2,000 requests a day", a day of the customer's: local midnight to the next
midnight, 23 or 25 hours across a daylight-saving change; a month from the 1st to the next 1st).

Lua inside Redis has no time-zone database, so the caller works out where the calendar periods
begin around its own clock, in the limit's zone (the ratelockr engine does it from the IANA
database, src/calendar.rs), and sends those instants; the script takes the window that holds the
Redis server's time. Every instance so counts into the window of Redis's time, even one whose own
clock is off, as long as the instants sent reach that far (the engine sends two hours either side).
A window stores where it begins and ends with its count, so a caller's clock behind it never opens
an earlier window again, and a clock going backwards mints nothing. Redis runs a script on one
thread: reading and charging the count cannot interleave with another client's call.

KEYS
  [1] the window: a 24-byte string, struct.pack('<ddd', start_ms, end_ms, count): the window it
      counts and the units admitted in it (little-endian doubles holding integers); absent =
      nothing used
  [2] optional: the telemetry counter of allowed decisions (INCR'd when allowed)
  [3] optional: the telemetry counter of denied decisions (INCR'd when denied)
      KEYS[2] and KEYS[3] go together; give both or neither.

ARGV
  [1] limit        integer >= 1      units per calendar period
  [2] windows      "b0,b1,...,bk"    where the periods begin, k + 1 >= 2 ascending integers (ms
                                     since the epoch) separated by commas: window j runs from bj
                                     up to (not including) bj+1; the time must lie in one of them
  [3] now_ms       integer ms or ""  milliseconds since the epoch; "" = the Redis server's clock
  [4] cost         integer >= 0      units this request takes (optional, default 1; <= limit);
                                     0 is a peek: nothing is consumed, written or counted
  [5] stats TTL    integer seconds   TTL of the telemetry counters (optional, default 120)

REPLY  {allowed, remaining, retry_after_ms, reset_after_ms}
  allowed         1 or 0; a denied request charges nothing
  remaining       limit - used in this window (after this request when it is admitted)
  retry_after_ms  0 when allowed, else the wait until the window ends (the count starts again)
  reset_after_ms  the wait until the window ends

A stored window that ended when this one begins counts nothing; one that has not (a caller's
clock behind the stored window, or a limit whose period or zone was changed) keeps its count, and
the later of the two windows is the one counted in. An admission writes the window with PX until
its end on the Redis clock (on a caller's clock, for the window's length: expiry only evicts idle
state, so the same now_ms always gets the same answer); a denial writes nothing.
Redis work: TIME (server clock), GET, and SET on admission only.

EXAMPLE  (2,000 a day in Europe/Berlin: its days around 2026-12-07 begin at 23:00 UTC; decided at
08:30 UTC on the 7th, given as now_ms; "" would be the Redis clock)
  redis-cli EVAL "$(cat calendar.lua)" 1 ratelockr:cal:{api}:user42 2000 \
      1796511600000,1796598000000,1796684400000,1796770800000 1796632200000
  1) (integer) 1    2) (integer) 1999    3) (integer) 0    4) (integer) 52200000
]]

local nkeys = #KEYS
local limit, bounds = tonumber(ARGV[1]), ARGV[2]
local cost, stats_ttl = ARGV[4], ARGV[5]
if cost == '1' or cost == nil or cost == '' then cost = 1 else cost = tonumber(cost) end
if stats_ttl == '120' or stats_ttl == nil or stats_ttl == '' then stats_ttl = 120 else stats_ttl = tonumber(stats_ttl) end
if not ((nkeys == 1 or nkeys == 3)
    and limit and limit % 1 == 0 and limit >= 1 and limit <= 1e15
    and type(bounds) == 'string'
    and cost and cost % 1 == 0 and cost >= 0 and cost <= limit
    and stats_ttl and stats_ttl % 1 == 0 and stats_ttl >= 1 and stats_ttl <= 1e15) then
  local function fail(msg)
    return redis.error_reply('ratelockr calendar: ' .. msg)
  end
  local function show(v) return '\'' .. tostring(v) .. '\'' end
  local function int(value, min) -- nil unless an integer in min .. 1e15 (NaN: x % 1 is NaN)
    local x = tonumber(value)
    if x and x % 1 == 0 and x >= min and x <= 1e15 then return x end
  end
  if nkeys ~= 1 and nkeys ~= 3 then
    return fail('expected 1 key (the window) or 3 (the window, allowed counter, denied counter), got ' .. nkeys)
  end
  local l = int(ARGV[1], 1)
  if not l then return fail('limit must be an integer >= 1, got ' .. show(ARGV[1])) end
  if type(bounds) ~= 'string' then return fail('windows (ARGV[2]) are required') end
  local c = (ARGV[4] == nil or ARGV[4] == '') and 1 or int(ARGV[4], 0)
  if not c then return fail('cost must be an integer >= 0, got ' .. show(ARGV[4])) end
  if c > l then return fail('cost ' .. c .. ' exceeds limit ' .. l .. ': such a request can never pass') end
  if ARGV[5] ~= nil and ARGV[5] ~= '' and not int(ARGV[5], 1) then
    return fail('stats TTL must be an integer >= 1 (seconds), got ' .. show(ARGV[5]))
  end
  return fail('invalid arguments')
end

local now = ARGV[3]
local server_clock = now == nil or now == ''
if server_clock then
  local t = redis.call('TIME')
  local us = t[2] + 0
  now = t[1] * 1000 + (us - us % 1000) / 1000
else
  now = tonumber(now)
  if not (now and now % 1 == 0 and now >= 0 and now <= 9007199254740992) then
    return redis.error_reply('ratelockr calendar: now_ms must be an integer >= 0 (at most 2^53) or "", got \''
      .. tostring(ARGV[3]) .. '\'')
  end
end

local key = KEYS[1]
local err_prefix = 'ratelockr calendar: '
-- The blocks marked "shared" are policy.lua's text too, kept identical by tests/engine/lua_blocks.rs.
-- shared: calendar.read
local start, finish, edge = nil, nil, nil
for word in string.gmatch(bounds, '[^,]+') do
  local t = tonumber(word)
  if not (t and t % 1 == 0 and t >= 0 and t <= 9007199254740992 and (edge == nil or t > edge)) then
    return redis.error_reply(err_prefix .. 'windows must be ascending integers (ms since the epoch) separated by commas, got \'' .. bounds .. '\'')
  end
  if edge ~= nil and edge <= now and now < t then start, finish = edge, t end
  edge = t
end
if start == nil then
  return redis.error_reply(err_prefix .. 'the time ' .. string.format('%d', now) .. ' lies outside the windows given (' .. bounds
    .. '): the caller\'s clock is further from this one than its windows reach')
end
local used = 0
local state = redis.call('GET', key)
if state then
  local s, e, c
  if #state == 24 then s, e, c = struct.unpack('<ddd', state) end
  if not (s and s % 1 == 0 and e % 1 == 0 and c % 1 == 0 and c >= 0 and e > s) then
    return redis.error_reply(err_prefix .. key .. ' holds ' .. #state
      .. ' bytes that are not a calendar window (24 bytes: start_ms, end_ms, count, little-endian doubles)')
  end
  if e > start then
    used = c
    if s > start then start, finish = s, e end
  end
end
local yes = used + cost <= limit
-- end shared

local charge = cost > 0
local allowed, remaining, retry_after, reset_after = 0, 0, 0, 0
if yes then allowed = 1 end
-- shared: calendar.decide
if yes and charge then
  used = used + cost
  -- The key lives until the window ends on the Redis clock; on a caller's clock, for the
  -- window's length (its expiry only evicts idle state, never the answer to a given now_ms).
  local ttl = finish - now
  if not server_clock then ttl = finish - start end
  redis.call('SET', key, struct.pack('<ddd', start, finish, used), 'PX', string.format('%d', ttl))
end
remaining = limit - used
if remaining < 0 then remaining = 0 end
reset_after = finish - now
if not yes then retry_after = reset_after end
-- end shared

if nkeys == 3 and cost > 0 then
  local counter = KEYS[3 - allowed]
  if redis.call('INCR', counter) == 1 then redis.call('EXPIRE', counter, stats_ttl) end
end

return {allowed, math.floor(remaining), math.floor(retry_after), math.floor(reset_after)}
