-- Fixed window: one counter per key and window, INCR + PEXPIRE. Window k is
-- [phase + k*window, phase + (k+1)*window). Times are microseconds since
-- an epoch the caller chooses (Unix time in µs in production), below 2^53
-- so that Lua's doubles hold them exactly (Unix µs until the year 2255);
-- the caller passes the time, so replays run on a virtual clock.
-- KEYS[1] key. ARGV: mode (decide | peek | charge), now_us, ttl_ms,
-- window_us, phase_us, limit, then (peek) the caller's writes in flight, µs.
--   decide: INCR first, admit iff the count is <= limit (rejected hits are
--           counted, which does not change admission), atomically;
--   peek:   admit iff count + writes in flight in this window < limit
--           (read only);
--   charge: count one admitted request at now_ns.
local mode, now, ttl = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local window, phase, limit = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local function win(t) return math.floor((t - phase) / window) end
local key = KEYS[1] .. ':' .. string.format('%d', win(now))
if mode == 'decide' or mode == 'charge' then
  local c = redis.call('INCR', key)
  if c == 1 then redis.call('PEXPIRE', key, ttl) end
  if mode == 'charge' or c <= limit then return 1 end
  return 0
end
local c = tonumber(redis.call('GET', key) or '0')
for i = 7, #ARGV do
  if win(tonumber(ARGV[i])) == win(now) then c = c + 1 end
end
if c < limit then return 1 end
return 0
