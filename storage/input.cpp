#include "storage/input.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <utility>
#include <vector>

#include <zlib.h>

namespace kernelwatch::storage {
namespace {

using core::ErrorCode;

constexpr std::size_t kChunkBytes = std::size_t{1} << 18;

}  // namespace

struct InputFile::Gzip {
  z_stream stream{};
  std::vector<unsigned char> in = std::vector<unsigned char>(kChunkBytes);
  bool ended = false;
  ~Gzip() { inflateEnd(&stream); }
};

InputFile::InputFile(std::filesystem::path path, int fd) : path_(std::move(path)), fd_(fd) {}

InputFile::InputFile(InputFile&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      failed_(other.failed_),
      gzip_(std::move(other.gzip_)) {}

InputFile& InputFile::operator=(InputFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    failed_ = other.failed_;
    gzip_ = std::move(other.gzip_);
  }
  return *this;
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

core::Result<InputFile> InputFile::open(const std::filesystem::path& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) {
    return core::fail(ErrorCode::NotFound, path.string() + ": cannot open for reading");
  }
  if (std::filesystem::is_directory(status)) {
    return core::fail(ErrorCode::InvalidArgument, path.string() + ": is a directory");
  }
  if (!std::filesystem::is_regular_file(status)) {
    return core::fail(ErrorCode::InvalidArgument,
                      path.string() + ": is not a regular file (a device, pipe or socket)");
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return core::fail(ErrorCode::NotFound, path.string() + ": cannot open for reading");
  InputFile input(path, fd);
  if (path.extension() == ".gz") {
    input.gzip_ = std::make_unique<Gzip>();
    if (inflateInit2(&input.gzip_->stream, 15 + 16) != Z_OK) {
      return core::fail(ErrorCode::Internal, path.string() + ": cannot start gzip decompression");
    }
  }
  return input;
}

core::Result<std::size_t> InputFile::read(char* buffer, std::size_t size) {
  auto got = read_more(buffer, size);
  if (!got) failed_ = true;
  return got;
}

core::Result<std::size_t> InputFile::read_more(char* buffer, std::size_t size) {
  const auto read_fd = [&](void* into, std::size_t bytes) -> core::Result<std::size_t> {
    while (true) {
      const ssize_t got = ::read(fd_, into, bytes);
      if (got >= 0) return static_cast<std::size_t>(got);
      if (errno != EINTR) return core::fail(ErrorCode::IoError, path_.string() + ": read failed");
    }
  };
  if (!gzip_) return read_fd(buffer, size);
  Gzip& gz = *gzip_;
  if (gz.ended) return 0;
  z_stream& s = gz.stream;
  s.next_out = reinterpret_cast<Bytef*>(buffer);
  s.avail_out = static_cast<uInt>(std::min<std::size_t>(size, 1u << 30));
  if (size == 0) return 0;
  // Until some output: the compressed input may hold nothing but headers for a while.
  while (s.next_out == reinterpret_cast<Bytef*>(buffer)) {
    if (s.avail_in == 0) {
      const std::size_t got = KW_TRY(read_fd(gz.in.data(), gz.in.size()));
      if (got == 0) {
        return core::fail(ErrorCode::ParseError, path_.string() + ": not a complete gzip file");
      }
      s.next_in = gz.in.data();
      s.avail_in = static_cast<uInt>(got);
    }
    const int rc = inflate(&s, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      gz.ended = true;
      break;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      return core::fail(ErrorCode::ParseError, path_.string() + ": not a complete gzip file");
    }
  }
  return static_cast<std::size_t>(reinterpret_cast<char*>(s.next_out) - buffer);
}

core::Result<std::string> InputFile::read_all() {
  std::string text;
  std::array<char, 1 << 16> chunk{};
  while (true) {
    const std::size_t got = KW_TRY(read(chunk.data(), chunk.size()));
    if (got == 0) return text;
    if (text.size() + got > kMaxDocumentBytes) {
      return core::fail(
          ErrorCode::InvalidArgument,
          path_.string() + (gzip_ ? ": decompresses to more than 1 GiB; a JSON document is read "
                                    "whole: split it or write JSON Lines"
                                  : ": is over 1 GiB; a JSON document is read whole: split it "
                                    "or write JSON Lines"));
    }
    text.append(chunk.data(), got);
  }
}

Chunks chunks_of(std::shared_ptr<InputFile> input) {
  auto buffer = std::make_shared<std::vector<char>>(kChunkBytes);
  return [input = std::move(input), buffer]() -> core::Result<std::string_view> {
    const std::size_t got = KW_TRY(input->read(buffer->data(), buffer->size()));
    return std::string_view(buffer->data(), got);
  };
}

core::Result<bool> LineReader::next(std::string_view& line) {
  std::size_t scanned = start_;
  while (true) {
    const std::size_t end = buffer_.find('\n', scanned);
    if (end != std::string::npos) {
      line = std::string_view(buffer_).substr(start_, end - start_);
      start_ = end + 1;
      ++line_;
      return true;
    }
    if (ended_) {
      if (start_ >= buffer_.size()) return false;
      line = std::string_view(buffer_).substr(start_);
      start_ = buffer_.size();
      ++line_;
      return true;
    }
    buffer_.erase(0, start_);
    start_ = 0;
    scanned = buffer_.size();
    if (buffer_.size() > kMaxLineBytes) {
      return core::fail(ErrorCode::InvalidArgument,
                        name_ + ":" + std::to_string(line_ + 1) + ": a line longer than 64 MiB");
    }
    const std::string_view piece = KW_TRY(chunks_());
    if (piece.empty()) {
      ended_ = true;
    } else {
      buffer_.append(piece);
    }
  }
}

}  // namespace kernelwatch::storage
