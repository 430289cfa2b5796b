// Command grpchealth is a test container: a gRPC server with the standard
// health service on -port, whose status ("" and "svc") is SERVING until
// `grpchealth -set NOT_SERVING` runs in the same container (it writes the
// status to a file the server polls), so that tests flip it with an exec.
package main

import (
	"flag"
	"log"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

const statusFile = "/tmp/grpchealth-status"

func main() {
	port := flag.Int("port", 9090, "port to serve on")
	set := flag.String("set", "", "write SERVING or NOT_SERVING for the running server and exit")
	flag.Parse()
	if *set != "" {
		if err := os.WriteFile(statusFile, []byte(*set), 0o644); err != nil {
			log.Fatal(err)
		}
		return
	}
	l, err := net.Listen("tcp", ":"+strconv.Itoa(*port))
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	go follow(hs)
	log.Fatal(srv.Serve(l))
}

// follow applies the status file every 100 ms.
func follow(hs *health.Server) {
	for {
		st := healthpb.HealthCheckResponse_SERVING
		if b, err := os.ReadFile(statusFile); err == nil && strings.TrimSpace(string(b)) == "NOT_SERVING" {
			st = healthpb.HealthCheckResponse_NOT_SERVING
		}
		hs.SetServingStatus("", st)
		hs.SetServingStatus("svc", st)
		time.Sleep(100 * time.Millisecond)
	}
}
