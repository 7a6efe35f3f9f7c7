-- Signed GitHub pushes for wrk, none signed here: the harness writes a list of pre-signed
-- bodies (one per line: the path, the X-Hub-Signature-256 value and the body, separated by
-- tabs), and each request takes the next of them with a delivery id never used before, so
-- the client spends no CPU on an HMAC. The list holds a push for every request: the threads
-- take every other one, and a body sent twice is a replay, which the service answers
-- `replayed` and stores once; those are counted, and the harness fails the run.
--
-- Arguments: the list's file, a prefix that makes this run's delivery ids its own, and wrk's
-- thread count. done()
-- writes to the file INGEST_ACKED names one line per acknowledged delivery (a 2xx whose body
-- names it), then
--   SUMMARY acked=N requests=N non2xx=N errors=N duration_us=N p50_us=N p99_us=N replayed=N
-- which the harness checks against the store.

local threads = {}

function setup(thread)
   thread:set("thread_id", #threads + 1)
   table.insert(threads, thread)
end

function init(args)
   signed = {}
   for line in io.lines(args[1]) do
      local path, signature, body = line:match("^([^\t]+)\t([^\t]+)\t(.*)$")
      table.insert(signed, { path = path, signature = signature, body = body })
   end
   prefix = args[2] .. "-" .. thread_id .. "-"
   -- Thread i of n takes the i-th push of every n, so that no two send the same one.
   stride = tonumber(args[3])
   next_body = thread_id - 1
   sent = 0
   acked = {}
   non2xx = 0
   replayed = 0
end

function request()
   sent = sent + 1
   local push = signed[(next_body % #signed) + 1]
   next_body = next_body + stride
   return wrk.format("POST", push.path, {
      ["Content-Type"] = "application/json",
      ["X-GitHub-Event"] = "push",
      ["X-GitHub-Delivery"] = prefix .. sent,
      ["X-Hub-Signature-256"] = push.signature,
   }, push.body)
end

function response(status, headers, body)
   if body:find('"status":"replayed"', 1, true) then
      replayed = replayed + 1
      return
   end
   if status >= 200 and status < 300 then
      local delivery = body:match('"delivery":"([^"]+)"')
      if delivery then
         table.insert(acked, delivery)
         return
      end
   end
   non2xx = non2xx + 1
end

function done(summary, latency, requests)
   local out = io.open(os.getenv("INGEST_ACKED") or "/dev/stdout", "w")
   local total, refused, replays = 0, 0, 0
   for _, thread in ipairs(threads) do
      for _, delivery in ipairs(thread:get("acked")) do
         out:write(delivery, "\n")
         total = total + 1
      end
      refused = refused + thread:get("non2xx")
      replays = replays + thread:get("replayed")
   end
   local errors = summary.errors
   out:write(string.format(
      "SUMMARY acked=%d requests=%d non2xx=%d errors=%d duration_us=%d p50_us=%d p99_us=%d"
         .. " replayed=%d\n",
      total, summary.requests, refused,
      errors.connect + errors.read + errors.write + errors.timeout,
      summary.duration, latency:percentile(50), latency:percentile(99), replays))
   out:close()
end
