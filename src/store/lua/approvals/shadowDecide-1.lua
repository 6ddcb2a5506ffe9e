--[[
  shadowDecide-1: record what a person would have decided on a shadow call (first click wins). Only a
  record created as a shadow call (via = shadow) takes it; nothing else of the record changes (its status
  stays closed, and no ledger entry is ever written), so a shadow call can never run.

  KEYS[1] approval
  ARGV[1] the shadowDecision JSON {decision, by, at}

  Returns {won (0|1), field, value, ...} with the record as stored now; or -1 (not_found), -14 (not_shadow).
]]
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('HGET', KEYS[1], 'via') ~= 'shadow' then return -14 end
local won = redis.call('HSETNX', KEYS[1], 'shadowDecision', ARGV[1])
local result = {won}
for _, item in ipairs(redis.call('HGETALL', KEYS[1])) do result[#result + 1] = item end
return result
