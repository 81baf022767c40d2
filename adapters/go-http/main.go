// go-http: Go's net/http serving the bundled targets' two answers.
// Usage: go-http --port P
package main

import (
	"encoding/json"
	"flag"
	"log"
	"net/http"
	"time"
)

func main() {
	port := flag.String("port", "8080", "port to listen on (127.0.0.1)")
	flag.Parse()
	mux := http.NewServeMux()
	mux.HandleFunc("/plaintext", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("Hello, World!"))
	})
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"message": "Hello, World!"})
	})
	srv := &http.Server{
		Addr:        "127.0.0.1:" + *port,
		Handler:     mux,
		IdleTimeout: 600 * time.Second,
	}
	log.Fatal(srv.ListenAndServe())
}
