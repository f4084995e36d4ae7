--[[
ratelockr refund — gives back what one admitted request took from a limiter, atomically.

Why: a request checked against several rules whose keys live in different hash tags (so in
different Redis Cluster slots) cannot be decided by one script. The caller decides the rules one
by one in a stated order; when a later rule denies, the earlier rules' admissions are refunded
with this script, so a request that did not pass costs no rule anything.

The five decision scripts keep their contracts (a cost is an integer >= 0): a refund is never a
negative cost. It only ever moves a limiter towards "more allowance", bounded by the state that
is there: it never mints more than the allowance the refunded request took, never more than a
full allowance, and on a key that is gone (expired, reset) it does nothing. Between the decision
and its refund another request may have been decided; the refund then gives back the same
amount of the newest consumption (the log: the newest entries), which leaves the limiter exactly
as if the refunded request had not been made.

KEYS
  [1] the limiter key of the rule and client (the same key the decision script was given)

ARGV
  [1] kind        tb | gc | sw | sc | fw | cal   the key tag of the algorithm (src/keys.rs)
  [2] cost        integer >= 1             what the admitted request took
  [3] tb: capacity; gc: limit              (other kinds: unused)
  [4] gc: period_ms                        (other kinds: unused)

REPLY  1 when something was given back, 0 when there was nothing to give back to.

Per kind:
  tb  tokens = min(capacity, tokens + cost); last_refill and the TTL are kept.
  gc  TAT -= cost x T (T = period_ms / limit), exactly, in the script's own units; a TAT left in
      the past reads as a full allowance. A TAT stored under another limit is left alone.
  sw  ZPOPMAX cost: the newest cost entries of the log.
  sc  the current window's count falls by cost (what is left of cost comes off the previous
      window's, for a window that rolled over between the decision and the refund), floored at 0.
  fw  the counter (TTL mode) or the hash's count (explicit-clock mode) falls by cost, floored at 0.
  cal the stored window's count falls by cost, floored at 0; the window and its expiry are kept.
]]

local key, kind, cost = KEYS[1], ARGV[1], tonumber(ARGV[2])
if #KEYS ~= 1 or cost == nil or cost % 1 ~= 0 or cost < 1 then
  return redis.error_reply('ratelockr refund: expected 1 key and ARGV kind, cost (integer >= 1)')
end

if kind == 'tb' then
  local capacity = tonumber(ARGV[3])
  if capacity == nil or capacity < 1 then
    return redis.error_reply('ratelockr refund: tb needs ARGV[3] capacity >= 1')
  end
  -- shared: refund.tb
  local state = redis.call('GET', key)
  if not state or #state ~= 16 then return 0 end
  local tokens, last = struct.unpack('<dd', state)
  redis.call('SET', key, struct.pack('<dd', math.min(capacity, tokens + cost), last), 'KEEPTTL')
  return 1
  -- end shared
elseif kind == 'gc' then
  local limit, period = tonumber(ARGV[3]), tonumber(ARGV[4])
  if limit == nil or period == nil or limit < 1 or period < 1 then
    return redis.error_reply('ratelockr refund: gc needs ARGV[3] limit and ARGV[4] period_ms >= 1')
  end
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
return redis.error_reply('ratelockr refund: unknown kind \'' .. tostring(kind) .. '\' (tb, gc, sw, sc, fw, cal)')
