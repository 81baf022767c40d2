// Express 5 serving the bundled targets' two answers: node server.js --port P
// Express's usual headers stay (X-Powered-By, ETag), as its users run it.
"use strict";
const express = require("express");

const port = Number(process.argv[process.argv.indexOf("--port") + 1]);
const app = express();
app.get("/plaintext", (req, res) => {
  res.type("text/plain").send("Hello, World!");
});
app.get("/json", (req, res) => {
  res.json({ message: "Hello, World!" });
});
const server = app.listen(port, "127.0.0.1");
server.keepAliveTimeout = 600 * 1000;
server.maxRequestsPerSocket = 0;
