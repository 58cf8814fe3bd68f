// Test helper: a minimal HTTP/1.1 client for servers the tests start on 127.0.0.1 (one request
// per connection, `Connection: close`, bounded by a receive timeout).
// Enough for status codes, headers and bodies; no chunked request bodies.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace tern::testing {

struct HttpResponse {
  int status = 0;  // 0: no connection or no complete response
  std::string headers;
  std::string body;
};

inline HttpResponse http_request(int port, const std::string& method, const std::string& path,
                                 const std::string& body = "", int timeout_s = 10) {
  HttpResponse r;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return r;
  timeval tv{timeout_s, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return r;
  }
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  if (!body.empty() || method == "POST")
    req +=
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  req += "\r\n" + body;
  for (size_t sent = 0; sent < req.size();) {
    ssize_t n = send(fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      close(fd);
      return r;
    }
    sent += static_cast<size_t>(n);
  }
  std::string raw;
  char buf[8192];
  for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;) raw.append(buf, static_cast<size_t>(n));
  close(fd);
  size_t head_end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.", 0) != 0 || head_end == std::string::npos) return r;
  r.status = std::atoi(raw.c_str() + raw.find(' ') + 1);
  r.headers = raw.substr(0, head_end);
  r.body = raw.substr(head_end + 4);
  // Content-Length bodies only (what the servers under test send); chunked bodies are decoded.
  if (r.headers.find("Transfer-Encoding: chunked") != std::string::npos) {
    std::string out;
    size_t pos = 0;
    while (pos < r.body.size()) {
      size_t eol = r.body.find("\r\n", pos);
      if (eol == std::string::npos) break;
      size_t n = std::strtoul(r.body.c_str() + pos, nullptr, 16);
      if (n == 0) break;
      out += r.body.substr(eol + 2, n);
      pos = eol + 2 + n + 2;
    }
    r.body = out;
  }
  return r;
}

}  // namespace tern::testing
