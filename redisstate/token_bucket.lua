-- Token bucket with x/time/rate's arithmetic: a hash per key holds tokens
-- (a double, written with 17 significant digits so it round-trips) and the
-- time of the last admitted request. Times are microseconds since an epoch
-- the caller chooses (Unix time in µs in production), below 2^53 so that
-- Lua's doubles hold them exactly (Unix µs until the year 2255). A new key
-- is a full bucket; refill is continuous; a request takes one token; a
-- deficit worth less than 1 ns of refill is forgiven; a rejected request
-- changes nothing.
-- KEYS[1] key. ARGV: mode (decide | peek | charge), now_us, ttl_ms, rate
-- (tokens/s), capacity, then (peek) the caller's writes in flight, µs.
local mode, now, ttl = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local rate, cap = tonumber(ARGV[4]), tonumber(ARGV[5])
local key = KEYS[1]
local h = redis.call('HMGET', key, 'tokens', 'last')
local tokens, last = nil, nil
if h[1] then tokens, last = tonumber(h[1]), tonumber(h[2]) end
local function refill(t)
  if not tokens then return cap end
  local e = t - last
  local elapsed = math.floor(e / 1e6) + (e % 1e6) / 1e6
  return math.min(cap, tokens + elapsed * rate)
end
local function store(tk)
  redis.call('HSET', key, 'tokens', string.format('%.17g', tk), 'last', ARGV[2])
  redis.call('PEXPIRE', key, ttl)
end
if mode == 'charge' then
  store(refill(now) - 1)
  return 1
end
if mode == 'peek' then
  for i = 6, #ARGV do
    local t = tonumber(ARGV[i])
    tokens, last = refill(t) - 1, t
  end
end
local after = refill(now) - 1
if after < 0 and (-after / rate) * 1e9 >= 1 then return 0 end
if mode == 'decide' then store(after) end
return 1
