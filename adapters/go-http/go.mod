module icount/go-http

go 1.19
