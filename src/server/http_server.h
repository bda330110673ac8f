// HttpServer: cpp-httplib set up for ft serve — thread pool, body limit, API-key check, protocol-shaped
// errors for everything httplib answers itself (404, 413, 400), routes, and a clean stop.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "server/server_state.h"

namespace httplib {
class Server;
}

namespace ft::server {

class HttpServer {
 public:
  explicit HttpServer(ServerState& state);
  ~HttpServer();

  // Binds host:port (port 0: any free port) and starts serving on a background thread.
  Status start();
  int port() const { return port_; }
  // Stops accepting, ends running generations with an error event, waits for the HTTP threads.
  void stop();

 private:
  void setup();

  ServerState& state_;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace ft::server
