// Media reference rules (DESIGN.md, Server): data: URLs, http(s) allowlist, file:// under a root with the
// RFC 8089 authority rules (empty or "localhost" is local, any other host is refused, ".." and symlinks that
// leave the root are refused).
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "server/media.h"

namespace ft::server {
namespace {

namespace fs = std::filesystem;

class MediaRules : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() / ("ft_media_" + std::to_string(::getpid()));
    fs::create_directories(base_ / "root/sub");
    std::ofstream(base_ / "root/sub/cat.png") << "png";
    std::ofstream(base_ / "secret.png") << "png";
    fs::create_symlink(base_ / "secret.png", base_ / "root/link.png");
    policy_.local_root = (base_ / "root").string();
    policy_.allowed_domains = parse_domain_list(" Images.Example.com, cdn.test ");
  }
  void TearDown() override { fs::remove_all(base_); }
  bool ok(const std::string& url) { return check_media_url(policy_, url).ok(); }

  fs::path base_;
  MediaPolicy policy_;
};

TEST_F(MediaRules, DataUrls) {
  EXPECT_TRUE(ok("data:image/png;base64,iVBORw0KGgo="));
  EXPECT_FALSE(ok("data:text/plain;base64,aGVsbG8="));
  EXPECT_FALSE(ok("data:image/png,rawbytes"));
  EXPECT_FALSE(ok("data:image/png;base64,not base64!"));
}

TEST_F(MediaRules, HttpOnlyToAllowedHosts) {
  EXPECT_EQ(policy_.allowed_domains, (std::vector<std::string>{"images.example.com", "cdn.test"}));
  EXPECT_TRUE(ok("https://images.example.com/a.png"));
  EXPECT_TRUE(ok("http://CDN.test:8080/x.jpg"));
  EXPECT_FALSE(ok("https://evil.com/a.png"));
  EXPECT_FALSE(ok("https://images.example.com.evil.com/a.png"));
  EXPECT_FALSE(ok("https://user@evil.com/a.png"));
  EXPECT_TRUE(ok("https://user@cdn.test/a.png"));
  EXPECT_FALSE(check_media_url(MediaPolicy{}, "https://images.example.com/a.png").ok()) << "no allowlist: refused";
}

TEST_F(MediaRules, FileUrlsFollowRfc8089) {
  const std::string root = policy_.local_root;
  EXPECT_TRUE(ok("file://" + root + "/sub/cat.png"));
  EXPECT_TRUE(ok("file://localhost" + root + "/sub/cat.png"));
  EXPECT_TRUE(ok("file://" + root + "/sub/c%61t.png")) << "percent-escapes decode";
  EXPECT_FALSE(ok("file://otherhost" + root + "/sub/cat.png")) << "a remote authority";
  EXPECT_FALSE(ok("file://" + root + "/../secret.png")) << "'..' leaves the root";
  EXPECT_FALSE(ok("file://" + root + "/link.png")) << "a symlink out of the root";
  EXPECT_FALSE(ok("file://" + root + "/sub/missing.png"));
  EXPECT_FALSE(ok("file://" + root + "/sub"));
  EXPECT_FALSE(ok("file://" + root + "/sub/cat.png%00.txt"));
  EXPECT_FALSE(check_media_url(MediaPolicy{}, "file://" + root + "/sub/cat.png").ok()) << "no root: refused";
}

TEST_F(MediaRules, OtherSchemesAreRefused) {
  EXPECT_FALSE(ok("ftp://cdn.test/a.png"));
  EXPECT_FALSE(ok("javascript:alert(1)"));
  EXPECT_FALSE(ok("no-scheme"));
  EXPECT_FALSE(ok(""));
}

}  // namespace
}  // namespace ft::server
