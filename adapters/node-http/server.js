// Node's http module answering GET /plaintext and GET /json for `icount serve`.
//   node server.js --port P
// Keep-alive is held open far longer than any measured window (Node's default
// keepAliveTimeout of 5 s would close idle connections between windows under callgrind).
"use strict";
const http = require("http");

const portIndex = process.argv.indexOf("--port");
const port = portIndex > 0 ? Number(process.argv[portIndex + 1]) : NaN;
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error("usage: node server.js --port P");
  process.exit(2);
}

const PLAIN = Buffer.from("Hello, World!");
const JSON_BODY = Buffer.from('{"message":"Hello, World!"}');
const NOT_FOUND = Buffer.from("Not Found");

function answer(res, status, type, body) {
  res.writeHead(status, {
    "Content-Type": type,
    "Content-Length": body.length,
    "Keep-Alive": "timeout=600",
  });
  res.end(body);
}

const server = http.createServer((req, res) => {
  if (req.method === "GET" && req.url === "/plaintext") {
    answer(res, 200, "text/plain", PLAIN);
  } else if (req.method === "GET" && req.url === "/json") {
    answer(res, 200, "application/json", JSON_BODY);
  } else {
    answer(res, 404, "text/plain", NOT_FOUND);
  }
});
server.keepAliveTimeout = 600 * 1000;
server.headersTimeout = 660 * 1000; // must exceed keepAliveTimeout
server.requestTimeout = 0;
server.maxRequestsPerSocket = 0; // unlimited: never close a connection mid-window
server.listen(port, "127.0.0.1");
