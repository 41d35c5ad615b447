// For the tests of a rendezvous that cannot be reached (train/distributed, train/run).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

#include "train/distributed.h"

namespace ca::train {

/// A port on 127.0.0.1 that refuses connections: bound, never listened on, kept until the end of the test.
struct RefusingPort {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  uint16_t port = 0;
  RefusingPort() {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port = ntohs(addr.sin_port);
    }
  }
  ~RefusingPort() { ::close(fd); }
  RefusingPort(const RefusingPort&) = delete;
  RefusingPort& operator=(const RefusingPort&) = delete;
};

/// Rank 1 of a world of 2 whose store is at `port` on 127.0.0.1 (a RefusingPort's: it never answers).
inline DistEnv second_of_two_ranks_at(uint16_t port) {
  DistEnv env;
  env.rank = 1;
  env.world_size = 2;
  env.master_addr = "127.0.0.1";
  env.master_port = port;
  return env;
}

}  // namespace ca::train
