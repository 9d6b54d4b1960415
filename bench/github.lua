-- github.lua: a wrk script that sends what `hookbox bench` sends, so that
-- wrk can check the benchmark's own load generator (see BENCHMARKS.md):
-- every request a new GitHub push event, one constant JSON body signed once
-- with HMAC-SHA256 in X-Hub-Signature-256, and a fresh id in
-- X-GitHub-Delivery. As in `hookbox bench`, the id is in a header only, so
-- the body and its signature never change and a request costs wrk one
-- string concatenation.
--
-- Usage:
--
--   SIG=$(openssl dgst -sha256 -hmac hookbox-bench-secret -r bench/testdata/push-1024.json | cut -d' ' -f1)
--   wrk -t2 -c64 -d5s --latency -s bench/github.lua http://127.0.0.1:PORT/hooks/github -- \
--       bench/testdata/push-1024.json "$SIG" [ID-PREFIX]
--
-- bench/testdata/push-1024.json is the 1,024-byte body `hookbox bench` sends
-- by default (bench.PushBody(1024); a test keeps the two the same), and
-- hookbox-bench-secret the secret its servers verify. ID-PREFIX starts
-- every delivery id (default: "wrk-" and the time in seconds); give a new one
-- for each run against a store that is not fresh, or the events are
-- duplicates.
--
-- A delivery id is ID-PREFIX-THREAD-N: each wrk thread runs this script in a
-- Lua state of its own, and N counts the thread's requests in 12 digits
-- written least significant first ("100000000000", "200000000000", …), as
-- the generator writes its ids: one after the other they land all over
-- the receiver's index, as GitHub's random GUIDs do, instead of at one
-- point a thread (which made each insert cheaper: hookbox spent about 15%
-- less CPU an ack, see BENCHMARKS.md).

local threads = 0
local prefix = nil

function setup(thread)
   threads = threads + 1
   thread:set("thread_number", threads)
end

local head, tail
local n = 0

function init(args)
   if #args < 2 then
      error("usage: wrk ... -s github.lua URL -- BODYFILE SIGNATURE-HEX [ID-PREFIX]")
   end
   local f = assert(io.open(args[1], "rb"))
   local body = f:read("*a")
   f:close()
   prefix = args[3] or ("wrk-" .. os.time())
   head = "POST " .. wrk.path .. " HTTP/1.1\r\n" ..
      "Host: " .. wrk.headers["Host"] .. "\r\n" ..
      "Content-Type: application/json\r\n" ..
      "User-Agent: GitHub-Hookshot/bench\r\n" ..
      "X-Github-Event: push\r\n" ..
      "X-Github-Hook-Id: 123456789\r\n" ..
      "X-Hub-Signature-256: sha256=" .. args[2] .. "\r\n" ..
      "Content-Length: " .. #body .. "\r\n" ..
      "X-Github-Delivery: " .. prefix .. "-" .. thread_number .. "-"
   tail = "\r\n\r\n" .. body
end

function request()
   n = n + 1
   return head .. string.reverse(string.format("%012d", n)) .. tail
end
