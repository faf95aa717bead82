-- Sliding log: a sorted set per key, one member per logged request, scored
-- by its time; a request at now is admitted iff fewer than limit members
-- lie in (now - window, now]. Times are microseconds since an epoch the
-- caller chooses (Unix time in µs in production), below 2^53 so that
-- Lua's doubles and the scores hold them exactly (Unix µs until 2255).
-- KEYS[1] key. ARGV: mode (decide | peek | charge), now_us, ttl_ms,
-- window_us, limit, count_rejected (1: log every attempt, sliding_log;
-- 0: admitted requests only, sliding_window), member (unique), then (peek)
-- the caller's writes in flight, µs.
local mode, now, ttl = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local window, limit = tonumber(ARGV[4]), tonumber(ARGV[5])
local countRejected, member = ARGV[6] == '1', ARGV[7]
local key = KEYS[1]
local cutoff = string.format('%.17g', now - window)
if mode == 'peek' then
  local n = redis.call('ZCOUNT', key, '(' .. cutoff, '+inf')
  for i = 8, #ARGV do
    if tonumber(ARGV[i]) > now - window then n = n + 1 end
  end
  if n < limit then return 1 end
  return 0
end
redis.call('ZREMRANGEBYSCORE', key, '-inf', cutoff)
local ok = mode == 'charge' or redis.call('ZCARD', key) < limit
if ok or countRejected then
  redis.call('ZADD', key, ARGV[2], member)
  redis.call('PEXPIRE', key, ttl)
end
if ok then return 1 end
return 0
