#include "ir/safetensors.h"

#include <unistd.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "ir/fingerprint.h"
#include "ir/model_py.h"
#include "ir/tensor_init.h"

namespace ca {
namespace {

class SafetensorsTest : public testing::Test {
 protected:
  void SetUp() override {
    m_dir = testing::TempDir() + "ca_safetensors_" + std::to_string(getpid()) + "_" +
            testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::create_directories(m_dir);
    m_path = m_dir + "/w.safetensors";
  }
  void TearDown() override { std::filesystem::remove_all(m_dir); }

  // w: float32 [2, 3] = 0..5; steps: int64 [] = 7.
  void write_weights() {
    const float w[6] = {0, 1, 2, 3, 4, 5};
    const int64_t steps = 7;
    ASSERT_TRUE(write_safetensors(
        m_path, {{"conv.weight", DType::float32, {2, 3}, {reinterpret_cast<const uint8_t*>(w), sizeof w}},
                 {"steps", DType::int64, {}, {reinterpret_cast<const uint8_t*>(&steps), sizeof steps}}}));
  }

  void write_raw(std::string_view bytes) { std::ofstream(m_path, std::ios::binary) << bytes; }

  Program file_program(const std::string& path, const std::string& key, std::string_view shape = "[2, 3]") {
    Json json = Json::parse(R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [2, 3]}],
      "params": [{"name": "w", "dtype": "float32", "shape": )" +
                            std::string(shape) + R"(,
                  "init": {"file": {"path": ")" +
                            path + R"(", "key": ")" + key + R"("}}}],
      "nodes": [{"op": "aten::add.Tensor", "args": ["%x", "%w"], "out": ["y"]}], "outputs": ["y"]})");
    auto program = parse_program(json);
    EXPECT_TRUE(program) << program.error();
    return program ? *program : Program{};
  }

  std::string m_dir, m_path;
};

TEST_F(SafetensorsTest, RoundTripKeepsOrderDtypesShapesAndBytes) {
  write_weights();
  auto entries = read_safetensors_header(m_path);
  ASSERT_TRUE(entries) << entries.error();
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0].key, "conv.weight");
  EXPECT_EQ((*entries)[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ((*entries)[1].dtype, DType::int64);
  EXPECT_EQ((*entries)[1].begin, 24u);
  auto bytes = read_safetensors_tensor(m_path, "conv.weight", DType::float32, {2, 3});
  ASSERT_TRUE(bytes) << bytes.error();
  float values[6];
  std::memcpy(values, bytes->data(), sizeof values);
  EXPECT_EQ(values[5], 5.0f);
  auto steps = read_safetensors_tensor(m_path, "steps", DType::int64, {});
  ASSERT_TRUE(steps);
  EXPECT_EQ((*steps)[0], 7);
  // The header is padded so the data starts 8-byte aligned, as the reference writer does.
  EXPECT_EQ(std::filesystem::file_size(m_path) % 8, 0u);
}

TEST_F(SafetensorsTest, ErrorsNameTheFileAndTheKey) {
  write_weights();
  auto wrong_shape = read_safetensors_tensor(m_path, "conv.weight", DType::float32, {3, 2});
  ASSERT_FALSE(wrong_shape);
  EXPECT_EQ(wrong_shape.error(), m_path + ": tensor 'conv.weight' is float32 [2, 3], the spec says float32 [3, 2]");
  auto wrong_dtype = read_safetensors_tensor(m_path, "steps", DType::int32, {});
  ASSERT_FALSE(wrong_dtype);
  EXPECT_NE(wrong_dtype.error().find("'steps' is int64 []"), std::string::npos);
  auto missing = read_safetensors_tensor(m_path, "conv.weigth", DType::float32, {2, 3});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error(), m_path + ": no tensor 'conv.weigth', did you mean 'conv.weight'?");
  auto no_file = read_safetensors_header(m_dir + "/none.safetensors");
  ASSERT_FALSE(no_file);
  EXPECT_NE(no_file.error().find("none.safetensors: cannot open"), std::string::npos);
}

TEST_F(SafetensorsTest, RefusesCorruptFiles) {
  write_raw("abc");
  EXPECT_NE(read_safetensors_header(m_path).error().find("shorter than 8 bytes"), std::string::npos);
  write_raw(std::string("\xff\xff\xff\xff\0\0\0\0{}", 10));
  EXPECT_NE(read_safetensors_header(m_path).error().find("does not fit"), std::string::npos);
  write_raw(std::string("\x02\0\0\0\0\0\0\0[]", 10));
  EXPECT_NE(read_safetensors_header(m_path).error().find("not a JSON object"), std::string::npos);
  // 8 bytes claimed for a float32 [3].
  std::string header = R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})";
  write_raw(std::string(1, char(header.size())) + std::string(7, '\0') + header + std::string(8, '\0'));
  EXPECT_NE(read_safetensors_header(m_path).error().find("'a'.data_offsets: 8 bytes do not hold F32 [3]"),
            std::string::npos);
  header = R"({"a":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})";
  write_raw(std::string(1, char(header.size())) + std::string(7, '\0') + header + std::string(1, '\0'));
  EXPECT_NE(read_safetensors_header(m_path).error().find("unsupported dtype 'F8_E4M3'"), std::string::npos);
}

TEST_F(SafetensorsTest, FileInitReadsTheFileBytes) {
  write_weights();
  Program program = file_program(m_path, "conv.weight");
  EXPECT_EQ(to_json(program.params[0].init),
            Json::parse(R"({"file": {"path": ")" + m_path + R"(", "key": "conv.weight"}})"));
  auto bytes = make_tensor_bytes(program.params[0], 123, 1);
  ASSERT_TRUE(bytes) << bytes.error();
  EXPECT_EQ(*bytes, *read_safetensors_tensor(m_path, "conv.weight", DType::float32, {2, 3}));
  EXPECT_EQ(param_files(program), std::vector<std::string>{m_path});
  EXPECT_TRUE(check_file_inits(program));
}

TEST_F(SafetensorsTest, FileInitMismatchNamesFileAndKey) {
  write_weights();
  Program program = file_program(m_path, "conv.weight", "[6]");
  auto bytes = make_tensor_bytes(program.params[0], 0, 1);
  ASSERT_FALSE(bytes);
  EXPECT_EQ(bytes.error(), m_path + ": tensor 'conv.weight' is float32 [2, 3], the spec says float32 [6]");
  auto checked = check_file_inits(program);
  ASSERT_FALSE(checked);
  EXPECT_EQ(checked.error(),
            "tensor 'w': " + m_path + ": tensor 'conv.weight' differs from the spec in dtype or shape");
  EXPECT_NE(check_file_inits(file_program(m_path, "bias")).error().find("no tensor 'bias'"), std::string::npos);
  EXPECT_NE(
      check_file_inits(file_program(m_dir + "/gone.safetensors", "w")).error().find("gone.safetensors: cannot open"),
      std::string::npos);
}

TEST(FileInit, ParseErrorsNameTheField) {
  auto parse = [](std::string_view init) {
    auto program = parse_program(Json::parse(R"({"params": [{"name": "w", "dtype": "float32", "shape": [2], "init": )" +
                                             std::string(init) + R"(}], "nodes": [], "outputs": ["w"]})"));
    return program ? std::string("ok") : program.error();
  };
  EXPECT_EQ(parse(R"({"file": {"path": "a.safetensors", "key": "w"}})"), "ok");
  EXPECT_EQ(parse(R"("file")"), "program.params[0].init: 'file' needs {\"path\": ..., \"key\": ...}");
  EXPECT_EQ(parse(R"({"file": "a.safetensors"})"),
            "program.params[0].init.file: 'file' needs {\"path\": ..., \"key\": ...}");
  EXPECT_EQ(parse(R"({"file": {"path": "a.safetensors"}})"), "program.params[0].init.file.key: missing field");
  EXPECT_EQ(parse(R"({"file": {"path": "a.safetensors", "key": "w", "kye": 1}})")
                .find("program.params[0].init.file.kye: unknown field, did you mean 'key'?"),
            0u);
  EXPECT_EQ(parse(R"({"file": {"path": "", "key": "w"}})"),
            "program.params[0].init.file: path and key must not be empty");
}

TEST_F(SafetensorsTest, FingerprintIgnoresPathAndKeyAndModelPyLoadsTheFile) {
  Program a = file_program("a.safetensors", "conv.weight");
  Program b = file_program("elsewhere/b.safetensors", "weight");
  EXPECT_EQ(fingerprint(a), fingerprint(b));
  Program drawn = a;
  drawn.params[0].init = Init{};
  EXPECT_NE(fingerprint(a), fingerprint(drawn));
  std::string py = render_model_py(a, "t");
  EXPECT_NE(py.find("import safetensors.torch\nimport torch\n"), std::string::npos);
  EXPECT_NE(py.find("self.w = torch.nn.Parameter(safetensors.torch.load_file(\"a.safetensors\")[\"conv.weight\"])"),
            std::string::npos);
  EXPECT_EQ(render_model_py(drawn, "t").find("safetensors"), std::string::npos);
}

// The rendered model.py loads the weights with safetensors, so Python reads
// what the C++ writer wrote: the same values as the harness.
TEST_F(SafetensorsTest, ModelPyLoadsTheWeightsUnderPython) {
  const std::string python = CA_SOURCE_DIR "/.venv/bin/python";
  if (!std::filesystem::exists(python)) GTEST_SKIP() << "no " << python;
  write_weights();
  std::ofstream(m_dir + "/model.py") << render_model_py(file_program(m_path, "conv.weight"), "t");
  std::string command =
      "cd " + m_dir + " && " + python +
      " -c \"import model; m = model.Model(); print(list(m.w.shape), m.w.sum().item(), m.w[1, 2].item())\" 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  int status = pclose(pipe);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << output;
  EXPECT_EQ(output, "[2, 3] 15.0 5.0\n");
}

}  // namespace
}  // namespace ca
