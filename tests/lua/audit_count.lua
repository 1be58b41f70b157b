-- Decode an auditlog with jsf.audit_records: prints "ev count" lines, the
-- stop records' trace numbers (as "stop-tr N") if arg[2] == "trs", the
-- last record's ev/text, and the status ("status clean" or the message).
local jsf = require("jitsframe")
local counts, order, last = {}, {}, nil
for rec in jsf.audit_records(arg[1]) do
  counts[rec.ev] = (counts[rec.ev] or 0) + 1
  if arg[2] == "trs" and rec.ev == "stop" then print("stop-tr " .. rec.tr) end
  if not order[rec.ev] then order[#order + 1] = rec.ev order[rec.ev] = true end
  last = rec
end
table.sort(order)
for _, ev in ipairs(order) do print(ev .. " " .. counts[ev]) end
if last then print("last " .. last.ev .. " " .. tostring(last.text)) end
print("status " .. (jsf.audit_status() or "clean"))
