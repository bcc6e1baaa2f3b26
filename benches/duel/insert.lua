-- Single inserts of unique keys (POST to the table, Prefer: return-no-content). Keys are
-- unique across threads (the thread id), connection counts and runs (DUEL_PREFIX).
package.path = os.getenv("DUEL_LUA_DIR") .. "/?.lua;" .. package.path
local common = require("common")
local table_name = os.getenv("DUEL_TABLE") or "ins"
local prefix = os.getenv("DUEL_PREFIX") or "k"
local headers = common.headers({
   ["Content-Type"] = "application/json",
   ["Prefer"] = "return-no-content",
})
local path = string.format("/%s/%s?%s", common.account, table_name, common.sas)
local counter = 0

setup = common.setup

request = function()
   counter = counter + 1
   local body = string.format(
      '{"PartitionKey":"%s-t%d","RowKey":"r%09d","Age":%d,"Score":%d.5,' ..
      '"Active":true,"Name":"Ada","City":"Zurich",' ..
      '"Big@odata.type":"Edm.Int64","Big":"%d"}',
      prefix, thread_id or 0, counter, counter % 100, counter % 1000, counter * 7919)
   return wrk.format("POST", path, headers, body)
end
