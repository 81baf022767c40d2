// The JDK's own HTTP server (com.sun.net.httpserver) answering GET /plaintext and
// GET /json for `icount serve`.  java -cp BUILD Server --port P
// One handler thread (the server's default executor runs handlers on its dispatcher
// thread), so a request's work stays on one thread and the JIT sees one caller.
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;

public final class Server {
    private static final byte[] PLAIN = "Hello, World!".getBytes(StandardCharsets.UTF_8);
    private static final byte[] JSON =
            "{\"message\":\"Hello, World!\"}".getBytes(StandardCharsets.UTF_8);
    private static final byte[] NOT_FOUND = "Not Found".getBytes(StandardCharsets.UTF_8);

    private static void answer(HttpExchange ex, int status, String type, byte[] body)
            throws IOException {
        ex.getResponseHeaders().set("Content-Type", type);
        // ab -k keeps a connection only when it reads "Keep-Alive" or "keep-alive";
        // the JDK writes header names as "Keep-alive"
        ex.getResponseHeaders().set("Connection", "keep-alive");
        ex.getResponseHeaders().set("Keep-Alive", "timeout=600");
        ex.sendResponseHeaders(status, body.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(body);
        }
    }

    public static void main(String[] args) throws IOException {
        int port = -1;
        for (int i = 0; i + 1 < args.length; i++) {
            if (args[i].equals("--port")) {
                port = Integer.parseInt(args[i + 1]);
            }
        }
        if (port < 0 || port > 65535) {
            System.err.println("usage: java Server --port P");
            System.exit(2);
        }
        HttpServer server =
                HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 0);
        server.createContext("/", ex -> {
            String path = ex.getRequestURI().getPath();
            boolean get = ex.getRequestMethod().equals("GET");
            if (get && path.equals("/plaintext")) {
                answer(ex, 200, "text/plain", PLAIN);
            } else if (get && path.equals("/json")) {
                answer(ex, 200, "application/json", JSON);
            } else {
                answer(ex, 404, "text/plain", NOT_FOUND);
            }
        });
        server.start();
    }
}
