// Tests that workspaces hold the reference, the ABI and instructions for the task at hand.
#include "sandbox/workspace.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "util/atomic_file.h"

namespace ca {
namespace {

namespace fs = std::filesystem;

class WorkspaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/ca-workspace-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    m_root = pattern;
    std::ifstream examples(std::string(CA_SOURCE_DIR) + "/examples/tasks.jsonl");
    std::string line;
    std::getline(examples, line);
    m_task = Json::parse(line);
  }
  void TearDown() override { fs::remove_all(m_root); }

  std::string read(const fs::path& path) const { return read_file(path.string()).value_or("<missing>"); }

  fs::path m_root;
  Json m_task;
};

TEST_F(WorkspaceTest, WritesEveryFileReadably) {
  mode_t old_umask = ::umask(077);  // the sandbox user must still be able to read everything
  auto created = create_workspace(m_task, (m_root / "ws").string(), "cuda");
  ::umask(old_umask);
  ASSERT_TRUE(created) << created.error();
  fs::path ws = m_root / "ws";
  EXPECT_TRUE(read(ws / "model.py").starts_with("# example/linear_leaky_relu\n")) << read(ws / "model.py");
  EXPECT_NE(read(ws / "model.py").find("class Model(torch.nn.Module)"), std::string::npos);
  EXPECT_EQ(Json::parse(read(ws / "task.json")), m_task);
  EXPECT_EQ(read(ws / "include" / "ca_kernel.h"), read(std::string(CA_SOURCE_DIR) + "/kernels/include/ca_kernel.h"));
  EXPECT_TRUE(fs::is_directory(ws / "kernels"));
  EXPECT_TRUE(fs::is_empty(ws / "kernels"));
  EXPECT_EQ(fs::status(ws).permissions() & fs::perms::all, fs::perms(0755));
  EXPECT_EQ(fs::status(ws / "kernels").permissions() & fs::perms::all, fs::perms(0755));
  EXPECT_EQ(fs::status(ws / "SKILL.md").permissions() & fs::perms::all, fs::perms(0644));
}

TEST_F(WorkspaceTest, SkillListsTensorsInAbiOrder) {
  auto program = parse_program(m_task["program"]);
  ASSERT_TRUE(program);
  std::string skill = render_skill_md(m_task, *program, "cuda");
  size_t x = skill.find("| 0 | `x` | input | float32 | [256, 1024] |");
  size_t w = skill.find("| 1 | `w` | param | float32 | [512, 1024] |");
  EXPECT_NE(x, std::string::npos) << skill;
  EXPECT_NE(w, std::string::npos) << skill;
  EXPECT_LT(x, w);
  EXPECT_NE(skill.find("| 0 | `t1` | see model.py | see model.py |"), std::string::npos) << skill;
  m_task["meta"] = {{"output_shapes", {{{"shape", {256, 512}}, {"dtype", "float32"}}}}};
  skill = render_skill_md(m_task, *program, "cuda");
  EXPECT_NE(skill.find("| 0 | `t1` | float32 | [256, 512] |"), std::string::npos) << skill;
}

TEST_F(WorkspaceTest, SkillIsWrittenForTheBackend) {
  auto program = parse_program(m_task["program"]);
  ASSERT_TRUE(program);
  std::string cuda = render_skill_md(m_task, *program, "cuda");
  std::string cpu = render_skill_md(m_task, *program, "cpu");
  for (const std::string& skill : {cuda, cpu}) {
    for (std::string_view needed :
         {"model.py", "ca_forward", "ca_kernel.h", "ca-verify", "ca-profile", "[PASS]", "[FAIL]", "atol = rtol = 1e-2",
          "dlopen", "sockets", "threads", "Caching", "Modifying the inputs", "ctx->stream", "ATen"}) {
      EXPECT_NE(skill.find(needed), std::string::npos) << needed;
    }
  }
  EXPECT_NE(cuda.find("`.cu` files"), std::string::npos);
  EXPECT_NE(cuda.find("<<<"), std::string::npos);
  EXPECT_NE(cpu.find("`.cpp` files"), std::string::npos);
  EXPECT_NE(cpu.find("#pragma omp"), std::string::npos);
  EXPECT_EQ(cpu.find("<<<"), std::string::npos);
}

TEST_F(WorkspaceTest, ErrorsNameTheField) {
  Json task = m_task;
  task.erase("id");
  auto created = create_workspace(task, (m_root / "a").string(), "cuda");
  ASSERT_FALSE(created);
  EXPECT_EQ(created.error(), "id: missing field");
  task = m_task;
  task["program"]["nodes"][1]["args"][0] = "%nope";
  created = create_workspace(task, (m_root / "a").string(), "cuda");
  ASSERT_FALSE(created);
  EXPECT_TRUE(created.error().starts_with("program.nodes[1].args[0]")) << created.error();
  created = create_workspace(m_task, (m_root / "a").string(), "opencl");
  ASSERT_FALSE(created);
  EXPECT_TRUE(created.error().starts_with("backend: must be one of 'cuda', 'cpu'")) << created.error();
  EXPECT_TRUE(fs::is_empty(m_root)) << "a failed workspace left files behind";
}

TEST_F(WorkspaceTest, RefusesANonEmptyDirectoryAndLeavesNothingBehind) {
  fs::create_directories(m_root / "ws");
  std::ofstream(m_root / "ws" / "keep") << "x";
  auto created = create_workspace(m_task, (m_root / "ws").string(), "cpu");
  ASSERT_FALSE(created);
  EXPECT_NE(created.error().find("already exists"), std::string::npos) << created.error();
  EXPECT_EQ(std::distance(fs::directory_iterator(m_root), fs::directory_iterator()), 1);
  fs::create_directories(m_root / "empty");
  EXPECT_TRUE(create_workspace(m_task, (m_root / "empty").string(), "cpu"));
  EXPECT_TRUE(fs::exists(m_root / "empty" / "SKILL.md"));
}

TEST_F(WorkspaceTest, RecordsItsBackendForTheJudgingTools) {
  for (std::string backend : {"cuda", "cpu"}) {
    auto created = create_workspace(m_task, (m_root / backend).string(), backend);
    ASSERT_TRUE(created) << created.error();
    auto recorded = workspace_backend((m_root / backend).string());
    ASSERT_TRUE(recorded) << recorded.error();
    EXPECT_EQ(*recorded, backend);
  }
  // A workspace made before workspace.json existed: no backend recorded, the tools fall back to their default.
  fs::remove(m_root / "cpu" / "workspace.json");
  auto old = workspace_backend((m_root / "cpu").string());
  ASSERT_TRUE(old);
  EXPECT_EQ(*old, "");
  std::ofstream(m_root / "cpu" / "workspace.json") << R"({"backend": "opencl"})";
  auto bad = workspace_backend((m_root / "cpu").string());
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("workspace.json: backend: must be one of"), std::string::npos) << bad.error();
}

TEST(WorkspaceIdTest, SanitizesIdsIntoDirectoryNames) {
  EXPECT_EQ(sanitize_id("example/linear_leaky_relu"), "example_linear_leaky_relu");
  EXPECT_EQ(sanitize_id("L1-19.relu"), "L1-19.relu");
  EXPECT_EQ(sanitize_id("../../etc"), ".._.._etc");
  EXPECT_EQ(sanitize_id(".."), "_..");
  EXPECT_EQ(sanitize_id(""), "_");
  EXPECT_EQ(sanitize_id("a b\n"), "a_b_");
}

}  // namespace
}  // namespace ca
