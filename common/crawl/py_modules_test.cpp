// Tests for the torch.nn.Module scanner on small Python trees written to a temp directory.
#include "crawl/py_modules.h"

#include <filesystem>
#include <fstream>
#include <random>

#include <gtest/gtest.h>

namespace ca {
namespace {

namespace fs = std::filesystem;

class PyModulesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string test_name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    m_root = fs::temp_directory_path() / ("ca_py_modules_" + test_name + "_" + std::to_string(std::random_device()()));
    fs::create_directories(m_root);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(m_root, ec);
  }

  void write(const std::string& relative, const std::string& text) {
    const fs::path path = m_root / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }

  std::vector<PyModule> scan() {
    auto result = scan_py_modules(m_root.string());
    EXPECT_TRUE(result.has_value()) << result.error();
    return result.value_or(std::vector<PyModule>{});
  }

  static std::vector<std::string> names(const std::vector<PyModule>& modules) {
    std::vector<std::string> out;
    for (const PyModule& m : modules) out.push_back(m.name);
    return out;
  }

  fs::path m_root;
};

const PyModule* find(const std::vector<PyModule>& modules, const std::string& name) {
  for (const PyModule& m : modules) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

TEST_F(PyModulesTest, FindsDirectSubclass) {
  write("net.py", R"py(import torch.nn as nn


class Net(nn.Module):
    def __init__(self, n):
        super().__init__()

    def forward(self, x):
        return x * 2
)py");
  const auto modules = scan();
  ASSERT_EQ(modules.size(), 1u);
  EXPECT_EQ(modules[0].name, "Net");
  EXPECT_EQ(modules[0].file, "net.py");
  EXPECT_EQ(modules[0].line, 4);
  EXPECT_EQ(modules[0].bases, std::vector<std::string>{"nn.Module"});
  EXPECT_EQ(modules[0].init_signature, "(self, n)");
  EXPECT_EQ(modules[0].forward_source, "def forward(self, x):\n    return x * 2\n");
  EXPECT_EQ(modules[0].init_source, "def __init__(self, n):\n    super().__init__()\n");
}

TEST_F(PyModulesTest, ResolvesTransitiveSubclassAcrossFiles) {
  write("base.py", R"py(from torch.nn import Module

class _NormBase(Module):
    def __init__(self, num_features: int, eps: float = 1e-5) -> None:
        super().__init__()
)py");
  write("sub/batchnorm.py", R"py(from ..base import _NormBase

class _BatchNorm(_NormBase):
    pass

class BatchNorm2d(_BatchNorm):
    def _check_input_dim(self, input):
        pass
)py");
  const auto modules = scan();
  ASSERT_EQ(names(modules), (std::vector<std::string>{"_NormBase", "_BatchNorm", "BatchNorm2d"}));
  EXPECT_EQ(modules[0].file, "base.py");
  EXPECT_EQ(modules[2].file, "sub/batchnorm.py");
  EXPECT_EQ(modules[2].line, 6);
  EXPECT_EQ(modules[2].bases, std::vector<std::string>{"_BatchNorm"});
  EXPECT_EQ(modules[2].init_signature, "(self, num_features: int, eps: float = 1e-5)");
  EXPECT_EQ(modules[2].forward_source, "");
}

TEST_F(PyModulesTest, IgnoresClassStatementsInStringsAndComments) {
  write("doc.py", R"py("""Module docs.

class FakeDoc(Module):
    pass
"""
# class FakeComment(Module):
s = "class FakeString(Module):"
t = '''
class FakeSingle(nn.Module): ''' ; u = 'it''s'


class Real(Module):
    """A docstring that looks like code.

    def forward(self, y):
        return y
    """

    def forward(self, x):
        return "def forward(self, z):"  # class FakeTrailing(Module):
)py");
  const auto modules = scan();
  ASSERT_EQ(names(modules), std::vector<std::string>{"Real"});
  EXPECT_EQ(modules[0].line, 12);
  EXPECT_EQ(modules[0].forward_source,
            "def forward(self, x):\n    return \"def forward(self, z):\"  # class FakeTrailing(Module):\n");
}

TEST_F(PyModulesTest, ParsesMultiLineBasesAndSignature) {
  write("fancy.py", R"py(class Fancy(
    Base1,  # a comment with a ) paren
    nn.Module,
    Generic[T, U],
    metaclass=ABCMeta,
):
    def __init__(
        self,
        kernel_size: Tuple[int, int] = (3, 3),
        mode: str = "same(pad",   # comment (
        act=nn.ReLU(inplace=True),
        *args,
        **kwargs,
    ) -> None:
        super().__init__()
)py");
  const auto modules = scan();
  ASSERT_EQ(modules.size(), 1u);
  EXPECT_EQ(modules[0].bases, (std::vector<std::string>{"Base1", "nn.Module", "Generic"}));
  EXPECT_EQ(modules[0].init_signature,
            "(self, kernel_size: Tuple[int, int] = (3, 3), mode: str = \"same(pad\", "
            "act=nn.ReLU(inplace=True), *args, **kwargs)");
}

TEST_F(PyModulesTest, CapturesCompleteForwardSourceDedented) {
  write("nested.py", R"py(class Outer:
    class Block(torch.nn.Module):
        @torch.no_grad()
        def forward(self, x):
            def helper(y):
                return y + 1

            z = helper(x)
            s = """
text at column zero
"""
            # a comment inside
            return z

        def extra(self):
            pass
)py");
  const auto modules = scan();
  ASSERT_EQ(names(modules), std::vector<std::string>{"Block"});
  EXPECT_EQ(modules[0].line, 2);
  EXPECT_EQ(modules[0].forward_source,
            "def forward(self, x):\n"
            "    def helper(y):\n"
            "        return y + 1\n"
            "\n"
            "    z = helper(x)\n"
            "    s = \"\"\"\n"
            "text at column zero\n"
            "\"\"\"\n"
            "    # a comment inside\n"
            "    return z\n");
}

TEST_F(PyModulesTest, InheritsForwardFromNearestBase) {
  write("chain.py", R"py(class A(Module):
    def forward(self, x): return x

class B(A):
    pass

class C(B):
    def forward(self, x):
        return -x
)py");
  const auto modules = scan();
  ASSERT_EQ(names(modules), (std::vector<std::string>{"A", "B", "C"}));
  EXPECT_EQ(modules[0].forward_source, "def forward(self, x): return x\n");
  EXPECT_EQ(modules[1].forward_source, "def forward(self, x): return x\n");
  EXPECT_EQ(modules[2].forward_source, "def forward(self, x):\n    return -x\n");
  EXPECT_EQ(modules[1].init_signature, "");
}

TEST_F(PyModulesTest, ExcludesNonModuleClasses) {
  write("mixed.py", R"py(class Config:
    pass

class Data(torch.utils.data.Dataset):
    pass

class Other(Modules, ModuleDict):
    pass

class Module:
    def __init__(self, *args, **kwargs) -> None:
        pass

class Child(Module):
    pass

class classifier_helper(object): pass
)py");
  const auto modules = scan();
  ASSERT_EQ(names(modules), std::vector<std::string>{"Child"});
  EXPECT_EQ(modules[0].init_signature, "(self, *args, **kwargs)");
}

TEST_F(PyModulesTest, MissingRootGivesErrorNamingPath) {
  const std::string missing = (m_root / "no_such_dir").string();
  const auto result = scan_py_modules(missing);
  ASSERT_FALSE(result.has_value());
  EXPECT_NE(result.error().find(missing), std::string::npos) << result.error();
}

TEST_F(PyModulesTest, RootThatIsAFileGivesError) {
  write("file.py", "x = 1\n");
  const std::string file = (m_root / "file.py").string();
  const auto result = scan_py_modules(file);
  ASSERT_FALSE(result.has_value());
  EXPECT_NE(result.error().find(file), std::string::npos) << result.error();
}

TEST(PyModulesTorchTest, FindsTorchNnModules) {
  const std::string dir = CA_SOURCE_DIR "/.venv/lib/python3.11/site-packages/torch/nn/modules";
  if (!fs::is_directory(dir)) GTEST_SKIP() << dir << " not found";
  const auto result = scan_py_modules(dir);
  ASSERT_TRUE(result.has_value()) << result.error();
  for (const char* name : {"ReLU", "GELU", "BatchNorm2d", "LayerNorm", "GroupNorm", "Conv2d", "ConvTranspose3d",
                           "MaxPool2d", "AvgPool1d", "MSELoss", "CrossEntropyLoss"}) {
    EXPECT_NE(find(*result, name), nullptr) << name;
  }
  const PyModule* conv = find(*result, "Conv2d");
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->file, "conv.py");
  EXPECT_NE(conv->forward_source.find("_conv_forward"), std::string::npos) << conv->forward_source;
  EXPECT_NE(conv->init_signature.find("in_channels"), std::string::npos) << conv->init_signature;
  const PyModule* batch_norm = find(*result, "BatchNorm2d");
  ASSERT_NE(batch_norm, nullptr);
  EXPECT_NE(batch_norm->init_signature.find("num_features"), std::string::npos) << batch_norm->init_signature;
}

}  // namespace
}  // namespace ca
