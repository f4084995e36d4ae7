--[[
ratelockr policy — one atomic decision of a stack of limits for one client key: all or nothing.

A policy holds a request to several limits at once (10 per second AND 2,000 per day). This
script decides every limit of the stack in one call, so no other client's call can come between
them: the request is admitted iff every limit admits it, and then every limit is charged its
cost; if any limit denies, no limit is charged anything. Redis runs a script on one thread, so
this is the critical section of all the limits together.

Each limit is decided exactly as its algorithm's standalone script decides it (token_bucket.lua,
gcra.lua, sliding_window_log.lua, sliding_window_counter.lua, fixed_window.lua, concurrency.lua,
calendar.lua;
read their headers for each algorithm's arithmetic): the same key format, the same stored state,
the same TTLs, the same four numbers. A stack of one limit is that script, bit for bit. The
call runs in two passes: the first reads every limit and decides it without writing anything (so
a corrupt key fails the call with nothing written), the second writes, limit by limit, what the
standalone script would write when the whole stack admits. The arithmetic it repeats from a
script is marked in both files (`-- shared: token_bucket.refill` ... `-- end shared`) and kept
one text, indentation aside, by tests/engine/lua_blocks.rs: change both copies together.

An in-flight limit (kind cc) is concurrency.lua's sorted set of leases: a stack that admits takes
one lease, under the request's member (ARGV[6]) as its lease id, in every cc limit of the stack,
whatever the cost; a stack that denies takes no lease anywhere, nor does a peek. The caller gives
the lease back when the request ends, or renews it, in all the stack's cc keys with ONE call of
lease.lua; a lease never released frees itself lease_ms after it was taken.

KEYS
  [1] .. [n]  the limits' state keys, one per limit in ARGV's order, distinct; each holds what
              its algorithm's standalone script keeps at its KEYS[1]
  [n+1]       optional: this second's counter of admitted decisions    (INCR'd when admitted)
  [n+2]       optional: this second's counter of denied decisions      (INCR'd when denied)
  [n+3]       optional: this second's counter of shadow denials (INCR'd when a shadow-mode
              policy would have denied); the three go together: #KEYS is n or n + 3
  [n+4]       optional, with the three: this second's counter of delayed admissions (INCR'd
              instead of [n+1] when admitted with delay_ms > 0); #KEYS may be n + 4

ARGV
  [1] n          integer 1..8      how many limits
  [2] now_ms     integer ms or ""  milliseconds since the epoch; "" = the Redis server's clock
  [3] cost       integer >= 0      units this request takes from every limit (optional, default
                                   1; at most every limit's capacity, burst or limit, except a
                                   cc limit's: any cost >= 1 takes one lease); 0 is a peek:
                                   nothing is consumed, written or counted
  [4] mode       "enforce" or "shadow"   (optional, default enforce) shadow: a request the limits
                                   deny is admitted all the same (allowed 1, would_deny 1) and
                                   still charges nothing, taking no lease; what the limits admit
                                   is charged, its leases taken, exactly as if enforced
  [5] stats TTL  integer seconds   TTL of the telemetry counters (optional, default 120)
  [6] member     string            a unique id of this request (the engine sends 16 random
                                   URL-safe characters; older engines sent a UUID v4: any
                                   string works, old members still count and expire);
                                   required when a limit is a sliding window log (the member of
                                   its entries) or cc (the lease id), else ""
  [7] fw clock   "1" or ""         "1": fixed windows decide on now_ms (fixed_window.lua's CLOCK
                                   MODE, for replays on a virtual clock); "": on their key's TTL
  then four per limit i (ARGV[4i+4] .. ARGV[4i+7]): kind, then three parameters
      tb  capacity (integer >= 1), refill per second (number > 0), ""
      gc  limit (integer >= 1), period_ms (integer >= 1), burst (integer >= 1;
          burst x period_ms <= 2^52)
      sw  limit (integer >= 1), window_ms (integer >= 1), ""
      sc  limit (integer >= 1), window_ms (integer >= 1; limit x window_ms <= 2^52), ""
      fw  limit (integer >= 1), window_ms (integer >= 1), ""
      cc  limit (integer >= 1: leases live at once), lease_ms (integer >= 1), ""
      cal limit (integer >= 1), windows ("b0,b1,...": where the calendar periods begin around
          now, as calendar.lua's ARGV[2]), ""
  then, after the limits, ARGV[4n+8]:
      max_delay_ms  integer >= 0  optional: delay instead of deny (only with tb and gc limits;
                                  gc: burst x period_ms + max_delay_ms x limit <= 2^52). When
                                  some limit denies but every limit would admit within
                                  max_delay_ms, the stack is admitted now with delay_ms, the
                                  longest of their waits, and every limit is charged as though
                                  the request arrived delay_ms later (token_bucket.lua's and
                                  gcra.lua's ARGV of the same name); one that would wait
                                  longer is denied and charges nothing. Given (even "0" or
                                  ""), the reply has one more integer.

REPLY  6 + 4n integers, and delay_ms when ARGV[4n+8] is given
  [1] allowed         1 or 0: 1 when every limit admits, and in shadow mode always
  [2] remaining       the least of the limits' remaining
  [3] retry_after_ms  0 when allowed; else the greatest of the denying limits' waits
  [4] reset_after_ms  the greatest of the limits' reset waits
  [5] would_deny      1 when some limit denies (in either mode), else 0
  [6] binding         the limit that decided, 1-based: when some limit denies, the denying
                      limit with the longest wait; otherwise the one with the least remaining
                      (ties: the first)
  then per limit i, at [4i+3] .. [4i+6]: allowed, remaining, retry_after_ms, reset_after_ms,
      the limit's own verdict and numbers. When the stack is admitted these are the standalone
      script's. When it is denied, a denying limit says what its standalone script says, and
      a limit that would have admitted says so (allowed 1, retry 0) with the state it has,
      uncharged: its remaining and reset are what a peek (cost 0) would say.
      Under max_delay_ms, a denied stack's limit that would admit within it says allowed 1,
      and a denying limit's wait (and so [3]) is the wait until it would pass delayed by
      max_delay_ms at most.
  [7 + 4n]    delay_ms (only when ARGV[4n+8] is given): 0, or the wait before the admitted
              request may start (the caller waits it, then serves); remaining is then 0

The combined wait holds: every algorithm's admission only grows with time while nothing is
admitted (refills, TATs, windows and leases' expiries only move towards "more room"), so at
now + retry_after_ms
every limit admits the same request, the denying ones because each one's wait is at most the
greatest, the admitting ones because they still do; and one ms earlier the binding limit still
denies, its wait being the least after which it passes (a cc limit's wait is an upper bound: a
release frees a slot sooner). Waits are measured from the caller's now_ms, as in the standalone
scripts.

Redis work: TIME (server clock), one or two reads per limit (the log: three; cc: one, two when
full), and on admission each standalone script's writes; a denial writes nothing (the telemetry
counter aside).

EXAMPLE  (10 per second as a token bucket AND 2,000 per day as a fixed window, server clock)
  redis-cli EVAL "$(cat policy.lua)" 2 ratelockr:tb:{api}.per-second:user42 \
      ratelockr:fw:{api}.daily:user42 2 "" 1 enforce 120 "" "" tb 10 10 "" fw 2000 86400000 ""
  1) (integer) 1    2) (integer) 9    3) (integer) 0    4) (integer) 86400000
  5) (integer) 0    6) (integer) 1
  7) (integer) 1    8) (integer) 9    9) (integer) 0   10) (integer) 100
 11) (integer) 1   12) (integer) 1999 13) (integer) 0  14) (integer) 86400000

EXAMPLE  (10 requests in flight, leases of 60 s, AND 100 per second; then the lease given back)
  redis-cli EVAL "$(cat policy.lua)" 2 ratelockr:cc:{api}.in-flight:user42 \
      ratelockr:tb:{api}.per-second:user42 2 "" 1 enforce 120 req-1 "" cc 10 60000 "" tb 100 100 ""
  1) (integer) 1    2) (integer) 9    3) (integer) 0    4) (integer) 60000
  5) (integer) 0    6) (integer) 1
  7) (integer) 1    8) (integer) 9    9) (integer) 0   10) (integer) 60000
 11) (integer) 1   12) (integer) 99  13) (integer) 0   14) (integer) 10
  redis-cli EVAL "$(cat lease.lua)" 1 ratelockr:cc:{api}.in-flight:user42 release req-1 ""
  (integer) 1
]]

-- The hot path is written for Redis's CPU, as the standalone scripts are: arguments checked with
-- plain comparisons (x % 1 == 0 also rules out NaN and infinities), messages built only for a bad
-- one; the cost and stats TTL the engine sends ('1', '120') recognised by a string comparison,
-- cheaper than tonumber, and the cost sent to INCRBY as the very string (not a Lua number that
-- Redis would format on every call).
local nkeys = #KEYS
local n = tonumber(ARGV[1])
local cost, mode, stats_ttl, member = ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local cost_arg = '1'
if cost == '1' or cost == nil or cost == '' then cost = 1 else cost = tonumber(cost); cost_arg = cost end
if stats_ttl == '120' or stats_ttl == nil or stats_ttl == '' then stats_ttl = 120 else stats_ttl = tonumber(stats_ttl) end
local shadow = mode == 'shadow'
local fw_clock = ARGV[7] == '1'
-- Delay instead of deny, after the limits' ARGV (absent: deny at once, and a reply of 6 + 4n).
local max_delay = n and ARGV[4 * n + 8]
local delaying = max_delay ~= nil
if max_delay == nil or max_delay == '' or max_delay == '0' then max_delay = 0 else max_delay = tonumber(max_delay) end

-- All known of limit i lives in one flat table, 12 slots from b = 12 * (i - 1), each named:
-- v[b + KIND], v[b + TOKENS] (one table, not one per limit or field: fewer allocations on Redis's
-- thread; a local offset costs what a literal does). The kind, ARGV's parameters, the verdict:
local KIND, ARG1, ARG2, ARG3, YES = 1, 2, 3, 4, 5
local CAPACITY, RATE = ARG1, ARG2 -- tb
local LIMIT, PERIOD, BURST = ARG1, ARG2, ARG3 -- gc
local WINDOW, LEASE = ARG2, ARG2 -- sw, sc and fw: LIMIT, WINDOW; cc: LIMIT, LEASE
-- What the first pass found for the second (slots 6 .. 12), by kind; each is said where it is set.
local TOKENS, STORED, LAST, STATE = 6, 7, 8, 9 -- tb
local DIFF, AHEAD, FAR, FRAC = 6, 7, 8, 9 -- gc
local WAIT = 10 -- tb and gc under max_delay: the limit's own wait (0: admits now)
local USED, CURRENT, PREVIOUS, INDEX, ELAPSED, AT, SAME_WINDOW = 6, 7, 8, 9, 10, 11, 12 -- sc
local COUNT, NEWEST, OLDEST_OUT = 6, 7, 8 -- sw, and AT
local START, FRESH, TTL = 7, 8, 9 -- fw, and USED
local LIVE, NEED, NOW_TEXT = 6, 7, 8 -- cc
local FINISH = 8 -- cal: USED, START, FINISH (the window counted in)
local v = {false, false, false, false, false, false, false, false, false, false, false, false}
local valid = n and n % 1 == 0 and n >= 1 and n <= 8
  and (nkeys == n or nkeys == n + 3 or nkeys == n + 4)
  and max_delay and max_delay % 1 == 0 and max_delay >= 0 and max_delay <= 1e15
  and cost and cost % 1 == 0 and cost >= 0 and cost <= 1e15
  and stats_ttl and stats_ttl % 1 == 0 and stats_ttl >= 1 and stats_ttl <= 1e15
  and (shadow or mode == nil or mode == '' or mode == 'enforce')
  and (ARGV[7] == nil or ARGV[7] == '' or fw_clock)
if valid then
  for i = 1, n do
    local at = 4 * i + 4
    local kind, a, b = ARGV[at], tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2])
    local ok = a and a % 1 == 0 and a >= 1 and a <= 1e15 and (b or kind == 'cal')
    if ok then
      if kind == 'cal' then -- the windows are read (and checked) in the first pass
        b = ARGV[at + 2]
        ok = b ~= nil and cost <= a
      elseif kind == 'tb' then
        ok = b > 0 and b <= 1.7976931348623157e308 and cost <= a
      elseif kind == 'gc' then
        local c = tonumber(ARGV[at + 3])
        ok = b % 1 == 0 and b >= 1 and b <= 1e15 and c and c % 1 == 0 and c >= 1 and c <= 1e15
          and c * b + max_delay * a <= 4503599627370496 and cost <= c
        v[12 * (i - 1) + ARG3] = c
      elseif kind == 'sc' then
        ok = b % 1 == 0 and b >= 1 and b <= 1e15 and a * b <= 4503599627370496 and cost <= a
      elseif kind == 'sw' then
        ok = b % 1 == 0 and b >= 1 and b <= 1e15 and cost <= a and member ~= nil and member ~= ''
      elseif kind == 'fw' then
        ok = b % 1 == 0 and b >= 1 and b <= 1e15 and cost <= a
      elseif kind == 'cc' then -- any cost takes one lease
        ok = b % 1 == 0 and b >= 1 and b <= 1e15 and member ~= nil and member ~= ''
      else
        ok = false
      end
    end
    if ok and max_delay > 0 and kind ~= 'tb' and kind ~= 'gc' then ok = false end
    if not ok then
      valid = false
      break
    end
    local base = 12 * (i - 1)
    v[base + KIND], v[base + ARG1], v[base + ARG2] = kind, a, b
  end
end

if not valid then
  -- The slow path: find the first bad argument and name it.
  local function fail(msg) return redis.error_reply('ratelockr policy: ' .. msg) end
  local function show(v) return '\'' .. tostring(v) .. '\'' end
  local function int(value, min, max) -- nil unless an integer in min .. max (NaN: x % 1 is NaN)
    local x = tonumber(value)
    if x and x % 1 == 0 and x >= min and x <= (max or 1e15) then return x end
  end
  local count = int(ARGV[1], 1, 8)
  if not count then
    return fail('ARGV[1] n (the number of limits) must be an integer from 1 to 8, got ' .. show(ARGV[1]))
  end
  if nkeys ~= count and nkeys ~= count + 3 and nkeys ~= count + 4 then
    return fail('expected ' .. count .. ' keys (one per limit), ' .. (count + 3)
      .. ' (and the allowed, denied and shadow_denied counters) or ' .. (count + 4)
      .. ' (and the delayed counter), got ' .. nkeys)
  end
  local delay_at = 4 * count + 8
  local most_delay = (ARGV[delay_at] == nil or ARGV[delay_at] == '') and 0 or int(ARGV[delay_at], 0)
  if not most_delay then
    return fail('ARGV[' .. delay_at .. '] max_delay_ms must be an integer >= 0, got ' .. show(ARGV[delay_at]))
  end
  local c = (ARGV[3] == nil or ARGV[3] == '') and 1 or int(ARGV[3], 0)
  if not c then return fail('ARGV[3] cost must be an integer >= 0, got ' .. show(ARGV[3])) end
  if not (mode == nil or mode == '' or mode == 'enforce' or mode == 'shadow') then
    return fail('ARGV[4] mode must be "enforce", "shadow" or "", got ' .. show(mode))
  end
  if ARGV[5] ~= nil and ARGV[5] ~= '' and not int(ARGV[5], 1) then
    return fail('ARGV[5] stats TTL must be an integer >= 1 (seconds), got ' .. show(ARGV[5]))
  end
  if not (ARGV[7] == nil or ARGV[7] == '' or ARGV[7] == '1') then
    return fail('ARGV[7] fw clock must be "1" or "", got ' .. show(ARGV[7]))
  end
  local names = {
    tb = {'token bucket', 'capacity', 'refill per second'},
    gc = {'gcra', 'limit', 'period_ms', 'burst'},
    sw = {'sliding window log', 'limit', 'window_ms'},
    sc = {'sliding window counter', 'limit', 'window_ms'},
    fw = {'fixed window', 'limit', 'window_ms'},
    cc = {'concurrency', 'limit', 'lease_ms'},
    cal = {'calendar', 'limit', 'windows'},
  }
  for i = 1, count do
    local at = 4 * i + 4
    local kind = ARGV[at]
    local name = names[kind]
    if not name then
      return fail('limit ' .. i .. ': ARGV[' .. at .. '] kind must be tb, gc, sw, sc, fw, cc or cal, got ' .. show(kind))
    end
    local function param(j) return 'limit ' .. i .. ' (' .. name[1] .. '): ARGV[' .. (at + j) .. '] ' .. name[j + 1] end
    if most_delay > 0 and kind ~= 'tb' and kind ~= 'gc' then
      return fail('limit ' .. i .. ' (' .. name[1] .. '): max_delay_ms (ARGV[' .. delay_at
        .. ']) works with token bucket (tb) and gcra (gc) limits only')
    end
    local a = int(ARGV[at + 1], 1)
    if not a then return fail(param(1) .. ' must be an integer >= 1, got ' .. show(ARGV[at + 1])) end
    local most, most_name = kind == 'cc' and c or a, name[2] -- cc: any cost takes one lease
    if kind == 'tb' then
      local rate = tonumber(ARGV[at + 2])
      if rate == nil or rate ~= rate or rate <= 0 or rate == math.huge then
        return fail(param(2) .. ' must be a number > 0 (tokens per second), got ' .. show(ARGV[at + 2]))
      end
    elseif kind == 'cal' then
      if ARGV[at + 2] == nil then return fail(param(2) .. ' are required') end
    else
      local b = int(ARGV[at + 2], 1)
      if not b then return fail(param(2) .. ' must be an integer >= 1, got ' .. show(ARGV[at + 2])) end
      if kind == 'gc' then
        local burst = int(ARGV[at + 3], 1)
        if not burst then return fail(param(3) .. ' must be an integer >= 1, got ' .. show(ARGV[at + 3])) end
        if burst * b > 4503599627370496 then
          return fail(param(3) .. ': burst x period_ms must be at most 2^52 (4503599627370496), got '
            .. string.format('%.17g', burst * b))
        end
        if burst * b + most_delay * a > 4503599627370496 then
          return fail(param(3) .. ': burst x period_ms + max_delay_ms x limit must be at most 2^52 (4503599627370496), got '
            .. string.format('%.17g', burst * b + most_delay * a))
        end
        most, most_name = burst, 'burst'
      elseif kind == 'sc' and a * b > 4503599627370496 then
        return fail(param(1) .. ': limit x window_ms must be at most 2^52 (4503599627370496), got '
          .. string.format('%.17g', a * b))
      elseif (kind == 'sw' or kind == 'cc') and (member == nil or member == '') then
        return fail('ARGV[6] member (a unique request id) is required by limit ' .. i .. ' (' .. name[1] .. ')')
      end
    end
    if c > most then
      return fail('cost ' .. c .. ' exceeds limit ' .. i .. '\'s ' .. most_name .. ' ' .. most
        .. ': such a request can never pass')
    end
  end
  return fail('invalid arguments')
end

local now = ARGV[2]
local server_clock = now == nil or now == ''
if server_clock then
  local t = redis.call('TIME')
  -- TIME gives seconds and microseconds as strings, read as numbers once each.
  local us = t[2] + 0
  now = t[1] * 1000 + (us - us % 1000) / 1000
else
  now = tonumber(now)
  if not (now and now % 1 == 0 and now >= 0 and now <= 9007199254740992) then
    return redis.error_reply('ratelockr policy: ARGV[2] now_ms must be an integer >= 0 (at most 2^53) or "", got \''
      .. tostring(ARGV[2]) .. '\'')
  end
end

-- Floor division of integers below 2^53, exact, written out where needed (a helper function
-- would be a closure built on every call), as in gcra.lua: q = a / b; q = q - q % 1 is the floor
-- of the double quotient, which may round across an integer; r = a - q * b says so, and one step
-- puts q and r right. A ceiling adds 1 when r > 0.
-- The first pass: read and decide every limit, writing nothing; what the second pass needs goes
-- to slots 6 .. 12. Blocks marked "shared" are the scripts' text (tests/engine/lua_blocks.rs).
local err_prefix = 'ratelockr policy: '
local admit = true
for i = 1, n do
  local b = 12 * (i - 1)
  local kind, key = v[b + KIND], KEYS[i]
  if kind == 'tb' then
    local capacity, rate = v[b + CAPACITY], v[b + RATE]
    -- shared: token_bucket.read
    local state = redis.call('GET', key)
    local tokens, last
    if state then
      if #state == 16 then tokens, last = struct.unpack('<dd', state) end
      if tokens == nil or tokens ~= tokens or last % 1 ~= 0 then
        return redis.error_reply(err_prefix .. key .. ' holds ' .. #state
          .. ' bytes that are not a bucket (16 bytes: tokens and last_refill_ms, little-endian doubles)')
      end
    else
      tokens, last = capacity, now
    end
    -- end shared
    -- shared: token_bucket.refill
    local stored = tokens
    local elapsed = now - last
    if elapsed > 0 then
      tokens = tokens + elapsed * rate / 1000
      if tokens > capacity then tokens = capacity end
    end
    local yes = tokens >= cost
    -- end shared
    -- shared: token_bucket.delay
    -- Delay instead of deny: the least whole ms d after `last` at which the refill of the stored
    -- tokens reaches the cost (found as the waits below find it), as a wait from the caller's clock.
    local delay = 0
    if not yes and max_delay > 0 then
      local d = (cost - stored) * 1000 / rate
      local fraction = d % 1
      if fraction > 0 then d = d - fraction + 1 end
      while d > 1 and stored + (d - 1) * rate / 1000 >= cost do d = d - 1 end
      while stored + d * rate / 1000 < cost do d = d + 1 end
      delay = last + d - now
    end
    -- end shared
    -- refilled tokens; the stored tokens and last_refill; the key's value (false: none)
    v[b + TOKENS], v[b + STORED], v[b + LAST], v[b + STATE], v[b + YES] = tokens, stored, last, state, yes
    v[b + WAIT] = delay
  elseif kind == 'gc' then
    local limit, period, burst = v[b + LIMIT], v[b + PERIOD], v[b + BURST]
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
    -- units; whole ms; far ahead; the TAT's fraction of a ms
    v[b + DIFF], v[b + AHEAD], v[b + FAR], v[b + FRAC], v[b + YES] = diff, ahead, far, frac, yes
    v[b + WAIT] = delay
  elseif kind == 'sc' then
    local limit, window = v[b + LIMIT], v[b + WINDOW]
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
    -- the estimate; this and the previous window's counts; its index; ms into it; the clock
    -- read on (never behind the latest seen); the stored window is this one
    v[b + USED], v[b + CURRENT], v[b + PREVIOUS], v[b + INDEX] = used, current, previous, index
    v[b + ELAPSED], v[b + AT], v[b + SAME_WINDOW], v[b + YES] = elapsed, at, same_window, yes
  elseif kind == 'sw' then
    local limit, window = v[b + LIMIT], v[b + WINDOW]
    -- shared: sliding_window_log.read
    local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
    local at = now
    local newest_score = nil
    if newest[2] ~= nil then
      newest_score = tonumber(newest[2])
      if newest_score > now then at = newest_score end
    end
    -- Exclusive lower bound of the window, printed exactly: %d writes the digits %.17g would
    -- for an integer below 2^53, for less work; beyond, %.17g.
    local oldest_out = at - window
    if oldest_out < 9007199254740992 and oldest_out > -9007199254740992 then
      oldest_out = string.format('%d', oldest_out)
    else
      oldest_out = string.format('%.17g', oldest_out)
    end
    local count = redis.call('ZCOUNT', key, '(' .. oldest_out, '+inf')
    local yes = count + cost <= limit
    -- end shared
    -- entries in the window; the newest entry's time; the window's bound; the log's clock
    v[b + COUNT], v[b + NEWEST], v[b + OLDEST_OUT] = count, newest_score, oldest_out
    v[b + AT], v[b + YES] = at, yes
  elseif kind == 'cc' then
    local limit, id = v[b + LIMIT], member
    -- shared: concurrency.read
    local now_text = string.format('%d', now)
    local live = redis.call('ZCOUNT', key, '(' .. now_text, '+inf')
    local need = 1
    if cost == 0 then
      need = 0
    elseif live + 1 > limit then
      local own = redis.call('ZSCORE', key, id)
      if own and tonumber(own) > now then need = 0 end
    end
    local yes = live + need <= limit
    -- end shared
    -- live leases; leases this request needs (0: a peek, or its id's lease is live); `(now`
    v[b + LIVE], v[b + NEED], v[b + NOW_TEXT], v[b + YES] = live, need, now_text, yes
  elseif kind == 'cal' then
    local limit, bounds = v[b + LIMIT], v[b + ARG2]
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
    -- units used in the window; where it begins and ends
    v[b + USED], v[b + START], v[b + FINISH], v[b + YES] = used, start, finish, yes
  elseif fw_clock then
    local limit, window = v[b + LIMIT], v[b + WINDOW]
    local state = redis.pcall('HMGET', key, 'start', 'count')
    if state.err then
      -- The server clock's count (fixed_window.lua, A KEY LEFT BY THE OTHER MODE)
      -- shared: fixed_window.clock_reads_a_count
      local count = state.err:sub(1, 9) == 'WRONGTYPE' and tonumber(redis.call('GET', key))
      if not count or count % 1 ~= 0 then redis.call('HMGET', key, 'start', 'count') end
      local left = redis.call('PTTL', key)
      -- end shared
      state = left > 0 and {now - (window - left), count} or {false, false}
      if cost > 0 then redis.call('DEL', key) end
      if cost > 0 and left > 0 then redis.call('HSET', key, 'start', state[1], 'count', count) end
      if cost > 0 and left > 0 then redis.call('PEXPIRE', key, left) end
    end
    -- shared: fixed_window.clock_window
    local start, used = tonumber(state[1]), tonumber(state[2])
    local fresh = start == nil or used == nil or now - start > window
    if fresh then start, used = now, 0 end
    -- end shared
    -- count so far; window start; a window to open; fixed_window.lua admits every peek
    v[b + USED], v[b + START], v[b + FRESH] = used, start, fresh
    v[b + YES] = cost == 0 or used + cost <= limit
  else
    local value = redis.pcall('GET', key)
    if type(value) == 'table' and value.err then
      -- The caller's clock's {start, count} (fixed_window.lua, A KEY LEFT BY THE OTHER MODE)
      -- shared: fixed_window.count_reads_a_window
      local state = value.err:sub(1, 9) == 'WRONGTYPE' and redis.call('HMGET', key, 'start', 'count')
      if not (state and tonumber(state[1]) and tonumber(state[2])) then redis.call('GET', key) end
      -- end shared
      local left = redis.call('PTTL', key)
      value = left > 0 and state[2]
      if cost > 0 then redis.call('DEL', key) end
      if cost > 0 and value then redis.call('SET', key, value, 'PX', left) end
    end
    local used = 0
    if value then
      used = tonumber(value)
      if used == nil or used % 1 ~= 0 then
        return redis.error_reply(err_prefix .. key .. ' holds ' .. tostring(value)
          .. ', not a fixed window\'s integer count')
      end
    end
    -- count so far; what is left of the window; every peek admitted
    v[b + USED], v[b + TTL] = used, redis.call('PTTL', key)
    v[b + YES] = cost == 0 or used + cost <= v[b + LIMIT]
  end
  if not v[b + YES] then admit = false end
end

-- Delay instead of deny: when some limit denies and every one would admit within max_delay
-- ms, the stack is admitted `delay` ms from now (the longest of the limits' waits), each limit
-- charged as though the request arrived then: a bucket takes the tokens it finds then, a TAT
-- goes from max(TAT, now + delay).
local delay = 0
if not admit and max_delay > 0 then
  for i = 1, n do
    local wait = v[12 * (i - 1) + WAIT]
    if wait > delay then delay = wait end
  end
  if delay <= max_delay then
    admit = true
    for i = 1, n do
      local b = 12 * (i - 1)
      v[b + YES] = true
      if v[b + KIND] == 'tb' then
        local capacity, rate, stored, last = v[b + CAPACITY], v[b + RATE], v[b + STORED], v[b + LAST]
        local tokens
        -- shared: token_bucket.delayed
        -- Admitted `delay` ms from now, it takes the tokens it finds then; stored as of the clock the
        -- charge keeps (max(now, last)), less the refill until then, which the next call adds back:
        -- the stored tokens go below zero, and nothing more passes before the debt is paid.
        local from = last
        if now > from then from = now end
        tokens = stored
        if now + delay > last then
          tokens = stored + (now + delay - last) * rate / 1000
          if tokens > capacity then tokens = capacity end
        end
        if now + delay > from then tokens = tokens - (now + delay - from) * rate / 1000 end
        -- end shared
        v[b + TOKENS] = tokens
      elseif v[b + DIFF] < delay * v[b + LIMIT] then
        v[b + DIFF] = delay * v[b + LIMIT]
      end
    end
  else
    delay = 0
  end
end

-- The second pass: charge every limit when all admit (a cost, not a peek); each limit's four
-- numbers exactly as its standalone script finds them.
local charge = admit and cost > 0
local reply = {0, 0, 0, 0, 0, 1, 0, 0, 0, 0}
for i = 1, n do
  local b = 12 * (i - 1)
  local kind, key, yes = v[b + KIND], KEYS[i], v[b + YES]
  local allowed, remaining, retry_after, reset_after = 0, 0, 0, 0
  if yes then allowed = 1 end
  if kind == 'tb' then
    local capacity, rate = v[b + CAPACITY], v[b + RATE]
    local tokens, stored, last, state = v[b + TOKENS], v[b + STORED], v[b + LAST], v[b + STATE]
    if charge then
      -- shared: token_bucket.charge
      tokens = tokens - cost
      local previous = last
      if now > last then last = now end
      stored = tokens
      local ttl = (capacity / rate + max_delay / 1000) * 2
      local fraction = ttl % 1
      if fraction > 0 then ttl = ttl - fraction + 1 end
      local half = ttl * 500
      if server_clock and state and now - now % half == previous - previous % half then
        redis.call('SET', key, struct.pack('<dd', tokens, last), 'KEEPTTL')
      else
        if ttl < 9007199254740992 then ttl = string.format('%d', ttl) end
        redis.call('SET', key, struct.pack('<dd', tokens, last), 'EX', ttl)
      end
      -- end shared
    end
    -- shared: token_bucket.waits
    for target_is_capacity = allowed, 1 do
      local target, needed = cost, true
      if target_is_capacity == 1 then target, needed = capacity, tokens < capacity end
      if needed and stored < target then
        local d = (target - stored) * 1000 / rate
        local fraction = d % 1
        if fraction > 0 then d = d - fraction + 1 end
        while d > 1 and stored + (d - 1) * rate / 1000 >= target do d = d - 1 end
        while stored + d * rate / 1000 < target do d = d + 1 end
        local wait = last + d - now
        if wait < 0 then wait = 0 end
        if target_is_capacity == 1 then reset_after = wait else retry_after = wait end
      end
    end
    -- end shared
    remaining = tokens - tokens % 1
    if remaining < 0 then remaining = 0 end -- a debt left by delayed admissions
  elseif kind == 'gc' then
    local limit, period, burst = v[b + LIMIT], v[b + PERIOD], v[b + BURST]
    local span = burst * period
    local diff, ahead, far, frac = v[b + DIFF], v[b + AHEAD], v[b + FAR], v[b + FRAC]
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
    if remaining < 0 then remaining = 0 end -- a delayed admission: nothing passes now
  elseif kind == 'sc' then
    local limit, window = v[b + LIMIT], v[b + WINDOW]
    local used, current, previous, index = v[b + USED], v[b + CURRENT], v[b + PREVIOUS], v[b + INDEX]
    local elapsed, at, same_window = v[b + ELAPSED], v[b + AT], v[b + SAME_WINDOW]
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
  elseif kind == 'sw' then
    local limit, window = v[b + LIMIT], v[b + WINDOW]
    local count, newest_score, oldest_out, at = v[b + COUNT], v[b + NEWEST], v[b + OLDEST_OUT], v[b + AT]
    -- shared: sliding_window_log.decide
    if yes and charge then
      remaining = limit - count - cost
      redis.call('ZREMRANGEBYSCORE', key, '-inf', oldest_out)
      if cost == 1 then
        redis.call('ZADD', key, at, member)
      else
        local args = {at, member}
        for j = 2, cost do
          args[#args + 1] = at
          args[#args + 1] = member .. '#' .. j
        end
        redis.call('ZADD', key, (table.unpack or unpack)(args)) -- 5.4 (Dragonfly) has only table.unpack, 5.1 only unpack
      end
      redis.call('PEXPIRE', key, window)
      reset_after = at + window - now
    elseif yes then
      -- A peek (or an admission left uncharged): what is left, and when the log empties.
      remaining = limit - count
      if count > 0 then reset_after = newest_score + window - now end
    else
      remaining = math.max(limit - count, 0)
      -- Room for `cost` more appears once the (count + cost - limit)-th oldest entry leaves.
      local entry = redis.call('ZRANGEBYSCORE', key, '(' .. oldest_out, '+inf', 'WITHSCORES',
        'LIMIT', count + cost - limit - 1, 1)
      retry_after = tonumber(entry[2]) + window - now
      reset_after = newest_score + window - now
    end
    -- end shared
  elseif kind == 'cc' then
    local limit, lease, id, live, need, now_text = v[b + LIMIT], v[b + LEASE], member, v[b + LIVE], v[b + NEED], v[b + NOW_TEXT]
    -- shared: concurrency.decide
    if yes and charge then
      redis.call('ZREMRANGEBYSCORE', key, '-inf', now_text)
      live = live + redis.call('ZADD', key, now + lease, id)
      if redis.call('PTTL', key) < lease then redis.call('PEXPIRE', key, lease) end
    end
    remaining = limit - live
    if remaining < 0 then remaining = 0 end
    if live > 0 then reset_after = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]) - now end
    if not yes then
      local nth = live + need - limit - 1
      retry_after = tonumber(redis.call('ZRANGEBYSCORE', key, '(' .. now_text, '+inf', 'WITHSCORES', 'LIMIT', nth, 1)[2]) - now
    end
    -- end shared
  elseif kind == 'cal' then
    local limit, used, start, finish = v[b + LIMIT], v[b + USED], v[b + START], v[b + FINISH]
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
  elseif fw_clock then
    local limit, window = v[b + LIMIT], v[b + WINDOW]
    local used, start, fresh = v[b + USED], v[b + START], v[b + FRESH]
    if yes and charge then
      local count = used + cost
      if fresh then
        redis.call('HSET', key, 'start', start, 'count', count)
        redis.call('PEXPIRE', key, window)
      else
        redis.call('HSET', key, 'count', count)
      end
      remaining, reset_after = limit - count, start + window - now
    elseif yes then
      -- A peek, or an admission the stack did not charge: what is left of the open window.
      remaining = limit
      if not fresh then remaining, reset_after = math.max(limit - used, 0), start + window - math.max(now, start) end
    else
      remaining = math.max(limit - used, 0)
      reset_after = start + window - now
      retry_after = reset_after + 1
    end
  else
    local limit, window = v[b + LIMIT], v[b + WINDOW]
    local used, ttl = v[b + USED], v[b + TTL]
    if yes and charge then
      local count = redis.call('INCRBY', key, cost_arg)
      -- shared: fixed_window.ttl_repair
      if ttl < 0 then
        redis.call('PEXPIRE', key, window)
        ttl = window
      end
      -- end shared
      remaining, reset_after = limit - count, ttl
    elseif yes then
      remaining, reset_after = math.max(limit - used, 0), math.max(ttl, 0)
    else
      -- A count with no TTL would never end its window: fixed_window.lua gives it one.
      if ttl < 0 then
        redis.call('PEXPIRE', key, window)
        ttl = window
      end
      remaining, retry_after, reset_after = math.max(limit - used, 0), ttl + 1, ttl
    end
  end
  -- A stack denied under max_delay: a limit that would admit within it says so; a denying
  -- one's wait is until it would pass delayed by max_delay.
  if not yes and max_delay > 0 then
    if retry_after <= max_delay then yes, allowed, retry_after = true, 1, 0 else retry_after = retry_after - max_delay end
  end
  local at = 4 * i + 3
  reply[at], reply[at + 1], reply[at + 2], reply[at + 3] = allowed, remaining, retry_after, reset_after
  -- The combination: least remaining, greatest reset, and the binding limit.
  if i == 1 or remaining < reply[2] then reply[2] = remaining end
  if reset_after > reply[4] then reply[4] = reset_after end
  if admit then
    if remaining < reply[4 * reply[6] + 4] then reply[6] = i end
  elseif yes == false and (retry_after > reply[3] or reply[5] == 0) then
    reply[3], reply[5], reply[6] = retry_after, 1, i
  end
end

-- Shadow mode admits what the limits deny, with no wait (an admitted stack has none).
if admit or shadow then reply[1], reply[3] = 1, 0 end

if nkeys > n and cost > 0 then
  local counter = KEYS[n + 1]
  if not admit then
    if shadow then counter = KEYS[n + 3] else counter = KEYS[n + 2] end
  elseif delay > 0 and nkeys == n + 4 then
    counter = KEYS[n + 4]
  end
  if redis.call('INCR', counter) == 1 then redis.call('EXPIRE', counter, stats_ttl) end
end
if delaying then reply[#reply + 1] = delay end

-- Lua 5.4 integers (math.floor returns one): a 5.4 server (Dragonfly) replies a float as a double.
for i = 1, #reply do reply[i] = math.floor(reply[i]) end
return reply
