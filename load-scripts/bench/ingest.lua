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
--
-- With INGEST_TRACE naming a file, each acknowledged delivery's latency is also written
-- there, one line per delivery: the wall clock in microseconds since the Unix epoch when its
-- answer came, and its latency in microseconds (from the request's making, just before it is
-- written, to its answer). The service's trace of its writer uses the same clock. Without it
-- no clock is read.

local trace_path = os.getenv("INGEST_TRACE")
local now_us
if trace_path then
   local ffi = require("ffi")
   ffi.cdef[[
      typedef struct { long tv_sec; long tv_nsec; } ingest_timespec;
      int clock_gettime(int clock, ingest_timespec *now);
   ]]
   local CLOCK_REALTIME = 0
   local now = ffi.new("ingest_timespec")
   now_us = function()
      ffi.C.clock_gettime(CLOCK_REALTIME, now)
      return tonumber(now.tv_sec) * 1000000 + math.floor(tonumber(now.tv_nsec) / 1000)
   end
end

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
   sent_at = {}
   answered_at = {}
   latency = {}
   non2xx = 0
   replayed = 0
end

function request()
   sent = sent + 1
   local push = signed[(next_body % #signed) + 1]
   next_body = next_body + stride
   local delivery = prefix .. sent
   if now_us then
      sent_at[delivery] = now_us()
   end
   return wrk.format("POST", push.path, {
      ["Content-Type"] = "application/json",
      ["X-GitHub-Event"] = "push",
      ["X-GitHub-Delivery"] = delivery,
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
         local sent_then = sent_at[delivery]
         if sent_then then
            local t = now_us()
            table.insert(answered_at, t)
            table.insert(latency, t - sent_then)
            sent_at[delivery] = nil
         end
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
   if trace_path then
      local traced = io.open(trace_path, "w")
      for _, thread in ipairs(threads) do
         local at, took = thread:get("answered_at"), thread:get("latency")
         for i = 1, #at do
            traced:write(string.format("%d %d\n", at[i], took[i]))
         end
      end
      traced:close()
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
