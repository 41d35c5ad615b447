#include "util/unix_socket.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <thread>

namespace ca {
namespace {

using namespace std::chrono_literals;

std::string socket_path(const std::string& name) {
  std::string dir = ::testing::TempDir() + "unix_socket_test";
  std::filesystem::create_directories(dir);
  std::string path = dir + "/" + name;
  std::filesystem::remove(path);
  return path;
}

// Answers one connection by `answer(line)`; "" closes without an answer.
std::thread serve_once(UnixListener& listener, std::function<std::string(const std::string&)> answer) {
  return std::thread([&listener, answer] {
    std::optional<int> fd;
    while (!fd) fd = listener.accept(1000ms).value();
    auto line = read_line(*fd, 1 << 20, 0ms);
    std::string reply = line ? answer(*line) : answer("<" + line.error() + ">");
    if (!reply.empty()) (void)write_all(*fd, reply + "\n");
    ::close(*fd);
  });
}

TEST(UnixSocketTest, ARequestGetsItsAnswerLine) {
  auto listener = UnixListener::bind(socket_path("echo.sock"));
  ASSERT_TRUE(listener) << listener.error();
  auto server = serve_once(*listener, [](const std::string& line) { return "got " + line; });
  auto answer = unix_request(listener->path(), "{\"a\": 1}", 10s);
  server.join();
  ASSERT_TRUE(answer) << answer.error();
  EXPECT_EQ(*answer, "got {\"a\": 1}");
}

TEST(UnixSocketTest, TheSocketIsPrivateToItsOwner) {
  auto listener = UnixListener::bind(socket_path("private.sock"));
  ASSERT_TRUE(listener) << listener.error();
  struct stat info {};
  ASSERT_EQ(::stat(listener->path().c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0077, 0u);
}

TEST(UnixSocketTest, AServerThatClosesWithoutAnAnswerIsAnError) {
  auto listener = UnixListener::bind(socket_path("closes.sock"));
  ASSERT_TRUE(listener) << listener.error();
  auto server = serve_once(*listener, [](const std::string&) { return ""; });
  auto answer = unix_request(listener->path(), "hello", 10s);
  server.join();
  ASSERT_FALSE(answer);
  EXPECT_NE(answer.error().find("closed the connection without an answer"), std::string::npos) << answer.error();
}

TEST(UnixSocketTest, NoServerIsAConnectError) {
  auto answer = unix_request(socket_path("nobody.sock"), "hello", 1s);
  ASSERT_FALSE(answer);
  EXPECT_NE(answer.error().find("cannot connect to"), std::string::npos) << answer.error();
}

TEST(UnixSocketTest, ALiveSocketIsRefusedAndAStaleOneReplaced) {
  std::string path = socket_path("twice.sock");
  {
    auto first = UnixListener::bind(path);
    ASSERT_TRUE(first) << first.error();
    auto second = UnixListener::bind(path);
    ASSERT_FALSE(second);
    EXPECT_NE(second.error().find("already listens"), std::string::npos) << second.error();
  }
  // A socket file left by a server that died (bound, never removed).
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strcpy(address.sun_path, path.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ::close(fd);
  auto again = UnixListener::bind(path);
  EXPECT_TRUE(again) << again.error();
}

TEST(UnixSocketTest, AnOrdinaryFileIsNotReplaced) {
  std::string path = socket_path("file.sock");
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::fclose(f);
  }
  auto listener = UnixListener::bind(path);
  ASSERT_FALSE(listener);
  EXPECT_NE(listener.error().find("not a socket"), std::string::npos) << listener.error();
  EXPECT_TRUE(std::filesystem::exists(path));
}

TEST(UnixSocketTest, ALineIsReadFromAPipeToo) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::string text = "listening on x\nmore";
  ASSERT_EQ(::write(fds[1], text.data(), text.size()), ssize_t(text.size()));
  ::close(fds[1]);
  auto line = read_line(fds[0], 1 << 10, 1000ms);
  ::close(fds[0]);
  ASSERT_TRUE(line) << line.error();
  EXPECT_EQ(*line, "listening on x");
}

TEST(UnixSocketTest, ALineLongerThanTheLimitIsRefused) {
  auto listener = UnixListener::bind(socket_path("long.sock"));
  ASSERT_TRUE(listener) << listener.error();
  std::thread server([&] {
    std::optional<int> fd;
    while (!fd) fd = listener->accept(1000ms).value();
    auto line = read_line(*fd, 8, 0ms);
    (void)write_all(*fd, (line ? *line : line.error()) + "\n");
    ::close(*fd);
  });
  auto answer = unix_request(listener->path(), "0123456789abcdef", 10s);
  server.join();
  ASSERT_TRUE(answer) << answer.error();
  EXPECT_NE(answer->find("too long"), std::string::npos) << *answer;
}

}  // namespace
}  // namespace ca
