//! The outbox's Lua scripts: each checks the type of what it touches, so
//! a key of another type (written by anyone) is an answer, never an error.

/// Takes a lease: when absent, without expiry, or living longer than twice
/// the life asked for (`ARGV[3]`).
pub(super) const TAKE: &str = "local t = redis.call('PTTL', KEYS[1]) \
     if t == -2 or t == -1 or t > tonumber(ARGV[3]) then \
     redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end return 0";

/// Extends a lease only if it still holds the caller's token.
pub(super) const EXTEND: &str = "local v = redis.pcall('GET', KEYS[1]) \
     if v == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0";

/// Releases a lease only if it still holds the caller's token.
pub(super) const RELEASE: &str = "local v = redis.pcall('GET', KEYS[1]) \
     if v == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

/// `TYPE` of a key (`none` when absent).
pub(super) const TYPE: &str = "return redis.call('TYPE', KEYS[1]).ok";

/// Lists a member in the index (`ARGV[1]` score, `ARGV[2]` member,
/// `ARGV[3]` life, `ARGV[4]` `NX` or `-`). A key of another type there
/// (written by anyone who can reach the server) is replaced, so it never
/// stops deliveries; any other error is an error.
pub(super) const ZADD: &str = "local t = redis.call('TYPE', KEYS[1]).ok \
     if t ~= 'zset' and t ~= 'none' then redis.call('DEL', KEYS[1]) end \
     local n if ARGV[4] == 'NX' then n = redis.call('ZADD', KEYS[1], 'NX', ARGV[1], ARGV[2]) \
     else n = redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2]) end \
     redis.call('PEXPIRE', KEYS[1], ARGV[3]) return n";

/// Removes members (`ARGV`) from the index.
pub(super) const ZREM: &str = "if redis.call('TYPE', KEYS[1]).ok ~= 'zset' then return 0 end \
     return redis.call('ZREM', KEYS[1], unpack(ARGV))";

/// Members of the index (ARGV[1] of them at most), the unparseable ones
/// removed on the way; for the prune.
pub(super) const MEMBERS: &str = "if redis.call('TYPE', KEYS[1]).ok ~= 'zset' then return {} end \
     local out = {} \
     for _, m in ipairs(redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)) do \
       local job, id = string.match(m, '^([%w%-_%.]+)/(msg_%x+)$') \
       if job == nil or #job > 64 or #id ~= 36 then redis.call('ZREM', KEYS[1], m) \
       else out[#out + 1] = m end \
     end return out";

/// One pass over the index, by due time: removes members that name no
/// delivery; returns the next due time of a known job (or ''), the size of
/// the index, how many junk members it removed, the due members of known
/// jobs (`ARGV[5..]`) with their scores (at most `ARGV[2]`), a sample of
/// due members of other jobs (at most `ARGV[4]`), and each known job's
/// count. `ARGV[1]` now, `ARGV[3]` members read at most.
pub(super) const DUE: &str = r"
local key = KEYS[1]
local t = redis.call('TYPE', key).ok
if t ~= 'zset' then
  if t ~= 'none' then redis.call('DEL', key) end
  return {'', '0', '0', '0', '0'}
end
local now = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local sample = tonumber(ARGV[4])
local known = {}
for i = 5, #ARGV do known[ARGV[i]] = 0 end
local due, unknown, junk, nxt = {}, {}, 0, ''
local all = redis.call('ZRANGE', key, 0, tonumber(ARGV[3]) - 1, 'WITHSCORES')
for i = 1, #all, 2 do
  local m, s = all[i], tonumber(all[i + 1])
  local job, id = string.match(m, '^([%w%-_%.]+)/(msg_%x+)$')
  if job == nil or #job > 64 or #id ~= 36 or s == nil then
    redis.call('ZREM', key, m)
    junk = junk + 1
  elseif known[job] ~= nil then
    known[job] = known[job] + 1
    if s <= now then
      if #due < 2 * limit then
        due[#due + 1] = m
        due[#due + 1] = all[i + 1]
      end
    elseif nxt == '' then
      nxt = all[i + 1]
    end
  elseif s <= now and #unknown < sample then
    unknown[#unknown + 1] = m
  end
end
local out = {nxt, tostring(redis.call('ZCARD', key)), tostring(junk), tostring(#due / 2)}
for _, v in ipairs(due) do out[#out + 1] = v end
out[#out + 1] = tostring(#unknown)
for _, v in ipairs(unknown) do out[#out + 1] = v end
for j, n in pairs(known) do
  out[#out + 1] = j
  out[#out + 1] = tostring(n)
end
return out
";

/// The pending set of earlier versions (a plain set): members are moved to
/// the index. A key of another type is left alone.
pub(super) const SRANDMEMBER: &str =
    "if redis.call('TYPE', KEYS[1]).ok ~= 'set' then return {} end \
     return redis.call('SRANDMEMBER', KEYS[1], ARGV[1])";
pub(super) const SREM: &str = "if redis.call('TYPE', KEYS[1]).ok ~= 'set' then return 0 end \
     return redis.call('SREM', KEYS[1], ARGV[1])";
