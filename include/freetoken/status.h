// Status and Result<T>: how every public FreeToken call reports a recoverable outcome.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace ft {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,   // a caller passed something malformed (flag, shape, dtype)
  kNotFound,          // a file, tensor or key is missing
  kIoError,           // the OS refused a read, write or map
  kCorruptFile,       // a file's contents break its format
  kUnsupported,       // valid, but this build or backend cannot do it
  kOutOfMemory,       // an allocation failed
  kOutOfKvPages,      // the KV page pool is exhausted
  kInvalidRequest,    // a generation request is malformed
  kAborted,           // the request was cancelled
  kInternal,          // a bug; should not happen
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return {}; }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "code: message", for logs and CLI errors.
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status ok_status() { return {}; }
inline Status invalid_argument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status not_found(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status io_error(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
inline Status corrupt_file(std::string m) { return {StatusCode::kCorruptFile, std::move(m)}; }
inline Status unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
inline Status out_of_memory(std::string m) { return {StatusCode::kOutOfMemory, std::move(m)}; }
inline Status internal_error(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// A value or the Status saying why there is none.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<1>(v_);
  }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace ft

#define FT_STATUS_CONCAT_INNER(a, b) a##b
#define FT_STATUS_CONCAT(a, b) FT_STATUS_CONCAT_INNER(a, b)

// Returns the Status of `expr` from the enclosing function when it is not ok.
#define FT_RETURN_IF_ERROR(expr)                   \
  do {                                             \
    ::ft::Status ft_status_ = (expr);              \
    if (!ft_status_.ok()) return ft_status_;       \
  } while (0)

// `lhs = value of expr`, or return its Status.
#define FT_ASSIGN_OR_RETURN(lhs, expr) \
  FT_ASSIGN_OR_RETURN_IMPL(FT_STATUS_CONCAT(ft_result_, __LINE__), lhs, expr)
#define FT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()
