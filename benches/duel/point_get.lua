-- A point get of a random existing key: PartitionKey p000..p(P-1) (wider past 1000
-- partitions, as `tableq gen` writes them), RowKey r00000000..
-- (DUEL_ROWS rows per partition, as `tableq gen` lays out N entities over P partitions).
package.path = os.getenv("DUEL_LUA_DIR") .. "/?.lua;" .. package.path
local common = require("common")
local partitions = tonumber(os.getenv("DUEL_PARTITIONS") or "100")
local rows = tonumber(os.getenv("DUEL_ROWS") or "1000")
local table_name = os.getenv("DUEL_TABLE") or "bench"
local headers = common.headers()

setup = common.setup

init = function(args)
   math.randomseed(1000 + (thread_id or 0))
end

request = function()
   local p = math.random(0, partitions - 1)
   local r = math.random(0, rows - 1)
   local path = string.format("/%s/%s(PartitionKey='%s',RowKey='%s')?%s",
      common.account, table_name, common.partition_key(p, partitions), common.row_key(r),
      common.sas)
   return wrk.format("GET", path, headers)
end
