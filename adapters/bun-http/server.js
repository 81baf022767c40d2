// Bun's own HTTP server (Bun.serve) with the bundled targets' two answers:
// bun server.js --port P. Bun adds its Date header to every answer, as its users run it:
// the header's clock is refreshed by a timer, work that grows with time, not requests.
const port = Number(process.argv[process.argv.indexOf("--port") + 1]);
Bun.serve({
  hostname: "127.0.0.1",
  port,
  idleTimeout: 255, // seconds, Bun's most: windows can be that far apart under callgrind
  fetch(req) {
    const path = new URL(req.url).pathname;
    if (path === "/plaintext") {
      return new Response("Hello, World!", { headers: { "content-type": "text/plain" } });
    }
    if (path === "/json") {
      return Response.json({ message: "Hello, World!" });
    }
    return new Response("not found", { status: 404 });
  },
});
