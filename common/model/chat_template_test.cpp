#include "model/chat_template.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "util/atomic_file.h"

namespace ca::model {
namespace {

std::string render(const std::string& source, const Json& messages, bool gen = false) {
  auto t = ChatTemplate::parse(source);
  EXPECT_TRUE(t) << t.error();
  if (!t) {
    return "";
  }
  auto r = t->render(messages, Json(), gen);
  EXPECT_TRUE(r) << r.error();
  return r ? *r : "";
}

TEST(ChatTemplateTest, TrimsBlocksAndStripsTheirIndentationAsTransformersDoes) {
  const Json m = Json::parse(R"([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])");
  EXPECT_EQ(render("{% for x in messages %}\n  {% if loop.first %}\n[{{ x.role }}]\n  {% endif %}\n{{ x['content'] "
                   "}};\n{% endfor %}",
                   m),
            "[user]\na;\nb;\n");
  EXPECT_EQ(render("A  {{- ' B ' -}}  C {#- note -#} D", m), "A B CD");
}

TEST(ChatTemplateTest, LoopVariablesTestsFiltersAndMethods) {
  const Json m = Json::parse(R"([{"role": "user", "content": "  x  "}, {"role": "tool", "content": "y"}])");
  EXPECT_EQ(
      render("{% for x in messages %}{{ loop.index0 }}/{{ loop.length }}{{ ',' if not loop.last }}{% endfor %}", m),
      "0/2,1/2");
  EXPECT_EQ(
      render("{{ messages[0].content.strip() }}|{{ messages[0].content | trim | length }}|{{ messages[-1].role }}", m),
      "x|1|tool");
  EXPECT_EQ(render("{{ messages[0].missing is defined }} {{ messages[0].missing is not defined }} {{ none }}", m),
            "False True None");
  EXPECT_EQ(render("{% set n = messages | length %}{% if n > 1 and 'tool' in messages[1].role %}{{ n * 2 }}{% else "
                   "%}no{% endif %}",
                   m),
            "4");
  EXPECT_EQ(render("{% for x in messages if x.role == 'tool' %}{{ x.content }}{% else %}none{% endfor %}", m), "y");
}

TEST(ChatTemplateTest, ToJsonWritesPythonsSeparatorsAndKeepsUnicode) {
  EXPECT_EQ(python_json(Json::parse(R"({"a": [1, 2.5, "é\n\"q\""], "b": {}, "c": null, "d": true})")),
            R"({"a": [1, 2.5, "é\n\"q\""], "b": {}, "c": null, "d": true})");
}

TEST(ChatTemplateTest, UnsupportedConstructsAreErrorsWithTheirLine) {
  auto t = ChatTemplate::parse("ok\n{% macro m() %}{% endmacro %}");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().find("line 2: statement 'macro' is not supported"), std::string::npos) << t.error();
  EXPECT_FALSE(ChatTemplate::parse("{% if x %}never closed"));
  EXPECT_FALSE(ChatTemplate::parse("{{ 'unterminated }}"));
  auto r = ChatTemplate::parse("{{ raise_exception('no system role') }}");
  ASSERT_TRUE(r);
  EXPECT_NE(r->render(Json::array(), Json(), false).error().find("no system role"), std::string::npos);
  auto bad = ChatTemplate::parse("{{ 'a' + messages[0].content }}");
  ASSERT_TRUE(bad);
  EXPECT_NE(bad->render(Json::parse(R"([{"content": null}])"), Json(), false).error().find("line 1: operator '+'"),
            std::string::npos);
}

// Renders equal transformers' apply_chat_template: tests/cli/model_chat_template.sh writes the templates and the
// cases (tests/model/chat_template_reference.py) into CA_MODEL_TEMPLATE_CASES.
TEST(ChatTemplateReferenceTest, RendersEqualApplyChatTemplate) {
  const char* dir = std::getenv("CA_MODEL_TEMPLATE_CASES");
  if (dir == nullptr) {
    GTEST_SKIP() << "CA_MODEL_TEMPLATE_CASES not set (tests/cli/model_chat_template.sh sets it)";
  }
  std::ifstream in(std::filesystem::path(dir) / "cases.jsonl");
  std::string line;
  int cases = 0, errors = 0;
  while (std::getline(in, line)) {
    const Json c = Json::parse(line);
    const std::string name = c["template"];
    auto source = read_file((std::filesystem::path(dir) / (name + ".jinja")).string());
    ASSERT_TRUE(source);
    auto t = ChatTemplate::parse(*source);
    ASSERT_TRUE(t) << name << ": " << t.error();
    auto got = t->render(c["messages"], c["tools"], c["add_generation_prompt"].get<bool>());
    ++cases;
    if (c.contains("error")) {
      ++errors;
      EXPECT_FALSE(got) << name << ": transformers failed (" << c["error"] << ") but this rendered";
      continue;
    }
    ASSERT_TRUE(got) << name << ": " << got.error();
    EXPECT_EQ(*got, c["expected"].get<std::string>()) << name << " " << c["messages"].dump().substr(0, 200);
  }
  std::printf("%d cases (%d where both fail), renders equal apply_chat_template's\n", cases, errors);
  EXPECT_GE(cases, 16);
}

}  // namespace
}  // namespace ca::model
