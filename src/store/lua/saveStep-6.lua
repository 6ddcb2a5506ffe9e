--[[
  saveStep-6: persist one step: append the new messages, evidence and trace entries, rewrite the
  changing part of the header. Refused unless the caller holds the lease and its counts of persisted
  messages and evidence are current, so a stale worker can neither overwrite nor fork the history
  (nor add to the trace). The fixed part of the header (field `state`, written by createRun) is never
  touched.
  When ARGV[11] > 0 the run has finished: every key of the run gets that TTL (retention).

  KEYS[1] header   KEYS[2] messages   KEYS[3] evidence   KEYS[4] lease   KEYS[5] trace
  KEYS[6] approvals set
  ARGV[1] fence
  ARGV[2] expected persisted message count   ARGV[3] expected persisted evidence count
  ARGV[4] nonce of this call (a resend of the same call after a lost reply returns the stored counts)
  ARGV[5] changing part JSON (field `progress`)
  ARGV[6] status   ARGV[7] step   ARGV[8] stopReason ('' for none)   ARGV[9] updatedAt (ms)
  ARGV[10] pause: approval ids of the pending gated calls, space-separated ('' for none)
  ARGV[11] retention ms (> 0 only when the run has finished)
  ARGV[12] run key base `<p>:run:{<runId>}:`
  ARGV[13] trace entries kept (older ones are trimmed)
  ARGV[14] number of new messages m   ARGV[15] number of new evidence records e
  ARGV[16 .. 15+m] message rows, ARGV[16+m .. 15+m+e] evidence rows, the rest trace entries

  Returns {messageCount, evidenceCount, cancelRequested (0|1)}, or
  -1 (not_found), -2 (lease_lost), -3 (stale_fence), -5 (count_mismatch).
]]
-- @include check-fence
-- @include follow-header-ttl
-- @include expire-run-keys
local header, messages, evidence, trace = KEYS[1], KEYS[2], KEYS[3], KEYS[5]
local stored = redis.call('HMGET', header, 'messages', 'evidence', 'saveNonce', 'cancel')
if not stored[1] then return -1 end
local cancel = stored[4] and 1 or 0
if stored[3] == ARGV[4] then return {tonumber(stored[1]), tonumber(stored[2]), cancel} end
local refused = checkFence(KEYS[4], ARGV[1])
if refused ~= 0 then return refused end
if stored[1] ~= ARGV[2] or stored[2] ~= ARGV[3] then return -5 end

local m, e = tonumber(ARGV[14]), tonumber(ARGV[15])
local t = #ARGV - 15 - m - e
local messageCount, evidenceCount = tonumber(ARGV[2]), tonumber(ARGV[3])
-- A list created here (rather than by createRun) takes the header's TTL.
if m > 0 then
  messageCount = redis.call('RPUSH', messages, unpack(ARGV, 16, 15 + m))
  if messageCount == m then followHeaderTtl(header, messages) end
end
if e > 0 then
  evidenceCount = redis.call('RPUSH', evidence, unpack(ARGV, 16 + m, 15 + m + e))
  if evidenceCount == e then followHeaderTtl(header, evidence) end
end
if t > 0 then
  local length = redis.call('RPUSH', trace, unpack(ARGV, 16 + m + e, #ARGV))
  if length == t then followHeaderTtl(header, trace) end
  local keep = tonumber(ARGV[13])
  if length > keep then redis.call('LTRIM', trace, -keep, -1) end
end
redis.call('HSET', header,
  'progress', ARGV[5], 'status', ARGV[6], 'step', ARGV[7], 'stopReason', ARGV[8], 'updatedAt', ARGV[9],
  'pause', ARGV[10], 'messages', messageCount, 'evidence', evidenceCount, 'saveNonce', ARGV[4])
local retention = tonumber(ARGV[11])
if retention > 0 then
  redis.call('HSET', header, 'finishedAt', ARGV[9])
  expireRunKeys({header, messages, evidence, trace}, KEYS[6], ARGV[12], retention)
end
return {messageCount, evidenceCount, cancel}
