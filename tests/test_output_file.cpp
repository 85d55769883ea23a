// OutputFile (artifacts/atomic_file.h): what a user-named output path may be, and that writing
// to it never destroys anything - links, FIFOs, devices, stdout, inputs, modes, and a kill.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "artifacts/atomic_file.h"
#include "test_artifact_util.h"

using namespace twinbit;
using artifact::OutputFile;
using artifact::OutputRules;
using artifact::write_output;
namespace fs = std::filesystem;

namespace {

void put(const std::string& path, const std::string& text) {
  REQUIRE(write_output(path, text.data(), text.size()).ok());
}

std::string text_of(const std::string& path) {
  const std::vector<uint8_t> b = testart::read_file(path);
  return std::string(b.begin(), b.end());
}

mode_t lstat_mode(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? st.st_mode : 0;
}

std::string read_all(int fd) {
  std::string s;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;) s.append(buf, size_t(n));
  return s;
}

}  // namespace

TEST_CASE("output_through_a_symlink_replaces_its_target_and_the_link_stays") {
  const testart::TempDir dir;
  const std::string real = dir.path + "/real.bin", link = dir.path + "/link.bin";
  put(real, "old");
  REQUIRE(::symlink("real.bin", link.c_str()) == 0);
  put(link, "new contents");
  CHECK(S_ISLNK(lstat_mode(link)));
  CHECK(text_of(real) == "new contents");
  // A chain of two links, and a dangling link: its target is created, the link kept.
  REQUIRE(::symlink("link.bin", (dir.path + "/link2.bin").c_str()) == 0);
  put(dir.path + "/link2.bin", "third");
  CHECK(text_of(real) == "third");
  REQUIRE(::symlink("made.bin", (dir.path + "/dangling.bin").c_str()) == 0);
  put(dir.path + "/dangling.bin", "made");
  CHECK(S_ISLNK(lstat_mode(dir.path + "/dangling.bin")));
  CHECK(text_of(dir.path + "/made.bin") == "made");
  CHECK(testart::list_dir(dir.path) ==
        std::vector<std::string>{"dangling.bin", "link.bin", "link2.bin", "made.bin", "real.bin"});
}

TEST_CASE("output_to_a_fifo_with_a_reader_streams_the_bytes_and_it_stays_a_fifo") {
  const testart::TempDir dir;
  const std::string fifo = dir.path + "/pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // The reader is open before the writer (non-blocking, so an old writer that never opens the
  // FIFO cannot hang the test); 48 KiB fit in the pipe's buffer, so one thread does both.
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  REQUIRE(reader >= 0);
  std::string data(48 * 1024, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = char(i * 7 + 1);
  auto out = OutputFile::open(fifo);
  REQUIRE_MESSAGE(out.ok(), out.status().to_string());
  CHECK(out->kind() == OutputFile::Kind::stream);
  REQUIRE(out->write(data.data(), data.size()).ok());
  REQUIRE(out->commit().ok());
  CHECK(read_all(reader) == data);
  ::close(reader);
  CHECK(S_ISFIFO(lstat_mode(fifo)));
  CHECK(testart::list_dir(dir.path) == std::vector<std::string>{"pipe"});
}

TEST_CASE("output_to_a_character_device_streams_and_it_stays_a_device") {
  const testart::TempDir dir;
  // Through a link to /dev/null: a writer that replaced things would replace only the link.
  const std::string sink = dir.path + "/sink";
  REQUIRE(::symlink("/dev/null", sink.c_str()) == 0);
  put(sink, "into the void");
  CHECK(S_ISLNK(lstat_mode(sink)));
  CHECK(S_ISCHR(lstat_mode("/dev/null")));
  // The device itself: as root, a null device of our own in the test folder (never /dev/null,
  // which a broken writer running as root would destroy); otherwise /dev/null, which it cannot.
  std::string dev = "/dev/null";
  if (::geteuid() == 0) {
    dev = dir.path + "/null";
    if (::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) dev.clear();
  }
  if (!dev.empty()) {
    put(dev, "also into the void");
    CHECK(S_ISCHR(lstat_mode(dev)));
  }
}

TEST_CASE("output_dash_and_own_descriptors_stream_to_them_after_buffered_text_and_create_no_file") {
  const testart::TempDir dir, capture_dir;
  const std::string capture = capture_dir.path + "/stdout.txt";
  const int cwd = ::open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const int cap = ::open(capture.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int fds[2];
  REQUIRE((cwd >= 0 && cap >= 0 && ::pipe(fds) == 0));
  REQUIRE(::chdir(dir.path.c_str()) == 0);
  std::fflush(stdout);
  const int saved = ::dup(STDOUT_FILENO);
  ::dup2(cap, STDOUT_FILENO);
  // Nothing is checked while stdout is redirected (doctest prints there).
  std::fputs("buffered text; ", stdout);
  const Status s1 = write_output("-", "dash; ", 6);
  const Status s2 = write_output("/dev/fd/1", "dev-fd-1", 8);
  const std::string self = "/proc/self/fd/" + std::to_string(fds[1]);
  const Status s3 = write_output(self, "to a pipe", 9);
  std::fflush(stdout);
  ::dup2(saved, STDOUT_FILENO);
  ::close(saved);
  ::fchdir(cwd);
  ::close(cwd);
  ::close(cap);
  ::close(fds[1]);
  CHECK_MESSAGE(s1.ok(), s1.to_string());
  CHECK_MESSAGE(s2.ok(), s2.to_string());
  CHECK_MESSAGE(s3.ok(), s3.to_string());
  CHECK(text_of(capture) == "buffered text; dash; dev-fd-1");
  CHECK(read_all(fds[0]) == "to a pipe");
  ::close(fds[0]);
  CHECK(testart::list_dir(dir.path).empty());
  CHECK(write_output("/dev/fd/987", "x", 1).code() == TB_INVALID_ARGUMENT);  // not open
}

TEST_CASE("output_that_is_an_input_is_refused_however_named_and_the_input_is_unchanged") {
  const testart::TempDir dir;
  const std::string in = dir.path + "/model.tbsc";
  put(in, "the input");
  REQUIRE(::symlink("model.tbsc", (dir.path + "/alias").c_str()) == 0);
  REQUIRE(::link(in.c_str(), (dir.path + "/hardlink").c_str()) == 0);
  OutputRules rules;
  rules.inputs = {dir.path + "/does-not-exist", in};
  for (const std::string name : {"/model.tbsc", "/alias", "/hardlink"}) {
    CAPTURE(name);
    const Status st = write_output(dir.path + name, "out", 3, rules);
    CHECK(st.code() == TB_INVALID_ARGUMENT);
    CHECK(st.message().find("is the input") != std::string::npos);
  }
  CHECK(text_of(in) == "the input");
  CHECK(testart::list_dir(dir.path) == std::vector<std::string>{"alias", "hardlink", "model.tbsc"});
  CHECK(write_output(dir.path + "/other", "out", 3, rules).ok());
}

TEST_CASE("output_onto_a_folder_or_into_a_missing_folder_is_refused_and_creates_nothing") {
  const testart::TempDir dir;
  fs::create_directory(dir.path + "/folder");
  for (const std::string bad : {"/folder", "/folder/", "/missing/x.bin", "/folder/.."}) {
    CAPTURE(bad);
    const Status st = write_output(dir.path + bad, "x", 1);
    CHECK(st.code() == TB_INVALID_ARGUMENT);
    CHECK(st.message().find("folder") != std::string::npos);
  }
  CHECK(write_output("", "x", 1).code() == TB_INVALID_ARGUMENT);
  const std::string file = dir.path + "/file";
  put(file, "f");
  CHECK(write_output(file + "/x.bin", "x", 1).code() == TB_INVALID_ARGUMENT);
  CHECK(testart::list_dir(dir.path) == std::vector<std::string>{"file", "folder"});
  CHECK(testart::list_dir(dir.path + "/folder").empty());
}

TEST_CASE("output_into_an_unwritable_folder_is_refused_as_a_usage_error") {
  const testart::TempDir dir;
  // Root passes permission checks: a folder of a filesystem nobody may create files in.
  std::string folder = "/proc/self";
  if (::geteuid() != 0) {
    folder = dir.path + "/locked";
    fs::create_directory(folder);
    ::chmod(folder.c_str(), 0555);
  }
  const Status st = write_output(folder + "/y.bin", "x", 1);
  CHECK(st.code() == TB_INVALID_ARGUMENT);
  CHECK(st.message().find("cannot create a file") != std::string::npos);
}

TEST_CASE("output_keeps_the_mode_and_owner_of_the_file_it_replaces_and_refuses_read_only_files") {
  const testart::TempDir dir;
  for (const mode_t mode : {mode_t(0600), mode_t(0640), mode_t(0755)}) {
    CAPTURE(mode);
    const std::string p = dir.path + "/f" + std::to_string(mode);
    put(p, "before");
    REQUIRE(::chmod(p.c_str(), mode) == 0);
    put(p, "after");
    CHECK((lstat_mode(p) & 07777) == mode);
    CHECK(text_of(p) == "after");
  }
  const std::string ro = dir.path + "/read-only";
  put(ro, "keep me");
  REQUIRE(::chmod(ro.c_str(), 0444) == 0);
  const Status st = write_output(ro, "x", 1);
  CHECK(st.code() == TB_INVALID_ARGUMENT);
  CHECK(st.message().find("read-only (mode 0444)") != std::string::npos);
  CHECK(text_of(ro) == "keep me");
  CHECK((lstat_mode(ro) & 07777) == 0444);
  // A new file: 0644, as always.
  put(dir.path + "/new", "n");
  CHECK((lstat_mode(dir.path + "/new") & 07777) == 0644);
  if (::geteuid() == 0) {  // only root may give a file away
    const std::string p = dir.path + "/owned";
    put(p, "x");
    REQUIRE(::chown(p.c_str(), 4321, 4322) == 0);
    put(p, "y");
    struct stat st2 {};
    REQUIRE(::stat(p.c_str(), &st2) == 0);
    CHECK(st2.st_uid == 4321u);
    CHECK(st2.st_gid == 4322u);
  }
}

TEST_CASE("output_opened_shows_nothing_at_the_path_until_commit") {
  const testart::TempDir dir;
  const std::string p = dir.path + "/y.bin";
  put(p, "old");
  auto out = OutputFile::open(p);
  REQUIRE(out.ok());
  CHECK(out->target() == fs::canonical(dir.path).string() + "/y.bin");
  REQUIRE(out->write("new", 3).ok());
  CHECK(text_of(p) == "old");
  CHECK(testart::list_dir(dir.path) == std::vector<std::string>{"y.bin"});
  REQUIRE(out->commit().ok());
  CHECK(text_of(p) == "new");
  CHECK(out->commit().code() == TB_FAILED_PRECONDITION);
  {
    auto dropped = OutputFile::open(dir.path + "/never.bin");
    REQUIRE(dropped.ok());
    REQUIRE(dropped->write("x", 1).ok());
  }  // destroyed without commit
  CHECK(testart::list_dir(dir.path) == std::vector<std::string>{"y.bin"});
}

namespace {
// Forks a child that opens `path`, writes 4 MiB, tells us, and waits to be killed; kills it.
void kill_mid_write(const std::string& path, bool unnamed_temporary) {
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(ready[0]);
    OutputRules rules;
    rules.unnamed_temporary = unnamed_temporary;
    auto out = OutputFile::open(path, rules);
    if (!out.ok()) ::_exit(3);
    const std::vector<char> chunk(1 << 20, 'k');
    for (int i = 0; i < 4; ++i) {
      if (!out->write(chunk.data(), chunk.size()).ok()) ::_exit(4);
    }
    if (::write(ready[1], "w", 1) != 1) ::_exit(5);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char c = 0;
  const ssize_t n = ::read(ready[0], &c, 1);
  ::close(ready[0]);
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(n == 1);  // the child got half way
  CHECK(WIFSIGNALED(status));
}
}  // namespace

TEST_CASE("output_killed_mid_write_leaves_no_named_temporary_and_the_old_file_intact") {
  const testart::TempDir dir;
  const std::string p = dir.path + "/big.bin";
  put(p, "previous");
  kill_mid_write(p, /*unnamed_temporary=*/true);
  CHECK(testart::list_dir(dir.path) == std::vector<std::string>{"big.bin"});
  CHECK(text_of(p) == "previous");
}

TEST_CASE("output_named_fallback_killed_mid_write_is_cleaned_by_the_next_open_in_the_folder") {
  const testart::TempDir dir;
  const std::string p = dir.path + "/big.bin";
  put(p, "previous");
  kill_mid_write(p, /*unnamed_temporary=*/false);
  const std::vector<std::string> left = testart::list_dir(dir.path);
  REQUIRE(left.size() == 2);  // the stale temporary of the killed writer
  CHECK(left[0].rfind(".twinbit-tmp-big.bin-", 0) == 0);
  // A live writer's temporary is never taken for a stale one.
  OutputRules named;
  named.unnamed_temporary = false;
  auto live = OutputFile::open(dir.path + "/live.bin", named);
  REQUIRE(live.ok());
  REQUIRE(live->write("live", 4).ok());
  CHECK(testart::list_dir(dir.path).size() == 2);  // the stale one went, the live one came
  CHECK(artifact::remove_stale_temporaries(dir.path) == 0);
  REQUIRE(live->commit().ok());
  CHECK(testart::list_dir(dir.path) == std::vector<std::string>{"big.bin", "live.bin"});
  CHECK(text_of(p) == "previous");
  CHECK(text_of(dir.path + "/live.bin") == "live");
}
