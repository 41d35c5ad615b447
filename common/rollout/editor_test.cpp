#include "rollout/editor.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "util/atomic_file.h"

namespace ca {
namespace {
namespace fs = std::filesystem;

class FileEditorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_root = fs::path(::testing::TempDir()) / ("editor-" + std::to_string(::getpid()) + "-" +
                                               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(m_root);
    fs::create_directories(m_root / "kernels");
    ASSERT_TRUE(write_file_atomic((m_root / "model.py").string(), "a\nb\nc\n"));
  }
  void TearDown() override { fs::remove_all(m_root); }
  std::string contents(const std::string& path) { return read_file((m_root / path).string()).value_or("<none>"); }
  fs::path m_root;
};

TEST_F(FileEditorTest, CreatesEditsAndUndoes) {
  FileEditor editor(m_root.string(), 1000);
  ASSERT_TRUE(editor.run({{"command", "create"}, {"path", "kernels/k.cu"}, {"file_text", "one\ntwo\n"}}));
  ASSERT_TRUE(editor.run({{"command", "str_replace"}, {"path", "kernels/k.cu"}, {"old_str", "two"}, {"new_str", "2"}}));
  EXPECT_EQ(contents("kernels/k.cu"), "one\n2\n");
  ASSERT_TRUE(editor.run({{"command", "insert"}, {"path", "kernels/k.cu"}, {"insert_line", 1}, {"new_str", "x\ny"}}));
  EXPECT_EQ(contents("kernels/k.cu"), "one\nx\ny\n2\n");
  ASSERT_TRUE(editor.run({{"command", "insert"}, {"path", "kernels/k.cu"}, {"insert_line", 0}, {"new_str", "top"}}));
  EXPECT_EQ(contents("kernels/k.cu"), "top\none\nx\ny\n2\n");
  ASSERT_TRUE(editor.run({{"command", "undo_edit"}, {"path", "kernels/k.cu"}}));
  ASSERT_TRUE(editor.run({{"command", "undo_edit"}, {"path", "kernels/k.cu"}}));
  EXPECT_EQ(contents("kernels/k.cu"), "one\n2\n");
  ASSERT_TRUE(editor.run({{"command", "undo_edit"}, {"path", "kernels/k.cu"}}));
  ASSERT_TRUE(editor.run({{"command", "undo_edit"}, {"path", "kernels/k.cu"}}));
  EXPECT_FALSE(fs::exists(m_root / "kernels/k.cu"));
  EXPECT_EQ(editor.run({{"command", "undo_edit"}, {"path", "kernels/k.cu"}}).error(),
            "no edit of kernels/k.cu to undo");
}

TEST_F(FileEditorTest, ViewsNumberedLinesRangesAndDirectories) {
  FileEditor editor(m_root.string(), 1000);
  EXPECT_EQ(editor.run({{"command", "view"}, {"path", "model.py"}}).value(), "1\ta\n2\tb\n3\tc\n");
  EXPECT_EQ(editor.run({{"command", "view"}, {"path", "model.py"}, {"view_range", {2, -1}}}).value(), "2\tb\n3\tc\n");
  EXPECT_TRUE(editor.run({{"command", "view"}, {"path", "model.py"}, {"view_range", {3, 9}}}).error().find("outside") !=
              std::string::npos);
  std::string listing = editor.run({{"command", "view"}, {"path", "."}}).value();
  EXPECT_NE(listing.find("kernels/\n"), std::string::npos) << listing;
  EXPECT_NE(listing.find("model.py\n"), std::string::npos) << listing;
}

TEST_F(FileEditorTest, WritesOnlyUnderKernelsAndReadsOnlyInTheWorkspace) {
  FileEditor editor(m_root.string(), 1000);
  EXPECT_EQ(editor.run({{"command", "create"}, {"path", "model.py"}, {"file_text", "x"}}).error(),
            "model.py: files may be written only under kernels/");
  EXPECT_EQ(editor.run({{"command", "create"}, {"path", "kernels/../model.py"}, {"file_text", "x"}}).error(),
            "kernels/../model.py: files may be written only under kernels/");
  EXPECT_EQ(editor.run({{"command", "create"}, {"path", "kernels"}, {"file_text", "x"}}).error(),
            "kernels: files may be written only under kernels/");
  EXPECT_TRUE(editor.run({{"command", "create"}, {"path", "/etc/x"}, {"file_text", "x"}})
                  .error()
                  .starts_with("path must be relative"));
  EXPECT_EQ(editor.run({{"command", "view"}, {"path", "../x"}}).error(), "../x: outside the workspace");
  // A symlink the agent made with bash is followed before the check.
  fs::create_symlink("/etc", m_root / "kernels/escape");
  EXPECT_EQ(editor.run({{"command", "view"}, {"path", "kernels/escape/passwd"}}).error(),
            "kernels/escape/passwd: outside the workspace");
  fs::create_symlink(m_root / "model.py", m_root / "kernels/alias.cu");
  EXPECT_EQ(editor.run({{"command", "create"}, {"path", "kernels/alias.cu"}, {"file_text", "x"}}).error(),
            "kernels/alias.cu: files may be written only under kernels/");
  EXPECT_EQ(contents("model.py"), "a\nb\nc\n");
}

TEST_F(FileEditorTest, ExplainsBadArguments) {
  FileEditor editor(m_root.string(), 1000);
  ASSERT_TRUE(editor.run({{"command", "create"}, {"path", "kernels/k.cu"}, {"file_text", "aa aa"}}));
  EXPECT_EQ(editor.run({{"command", "str_replace"}, {"path", "kernels/k.cu"}, {"old_str", "aa"}}).error(),
            "old_str occurs 2 times in kernels/k.cu; make it unique");
  EXPECT_EQ(editor.run({{"command", "str_replace"}, {"path", "kernels/k.cu"}, {"old_str", "b"}}).error(),
            "old_str does not occur in kernels/k.cu");
  EXPECT_EQ(editor.run({{"command", "str_replace"}, {"path", "kernels/none.cu"}, {"old_str", "b"}}).error(),
            "kernels/none.cu: no such file (create it first)");
  EXPECT_EQ(editor.run({{"command", "delete"}, {"path", "kernels/k.cu"}}).error(),
            "unknown command 'delete': expected view, create, str_replace, insert or undo_edit");
  EXPECT_EQ(editor.run({{"path", "kernels/k.cu"}}).error(), "missing argument 'command'");
  EXPECT_EQ(editor.run({{"command", "create"}, {"path", 3}}).error(), "argument 'path' must be a string");
  EXPECT_EQ(editor.run({{"command", "insert"}, {"path", "kernels/k.cu"}, {"insert_line", 5}, {"new_str", "x"}}).error(),
            "insert_line 5 is outside 0..1");
}

TEST(CutMiddleTest, KeepsBothEndsWithinTheBudget) {
  std::string text = std::string(500, 'a') + std::string(500, 'b');
  std::string cut = cut_middle(text, 200);
  EXPECT_LE(cut.size(), 200u);
  EXPECT_EQ(cut.front(), 'a');
  EXPECT_EQ(cut.back(), 'b');
  EXPECT_NE(cut.find("characters cut"), std::string::npos);
  EXPECT_EQ(cut_middle("short", 200), "short");
}

}  // namespace
}  // namespace ca
