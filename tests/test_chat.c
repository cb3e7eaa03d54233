/* Chat templates: detection from the published Jinja sources (written out
 * below) and rendering compared with what those templates produce, worked
 * out by hand from the Jinja. */
#include "sl_test.h"

#include <string.h>

#include "../engine/chat.h"
#include "../gguf/gguf.h"

/* meta-llama/Meta-Llama-3-8B-Instruct tokenizer_config.json chat_template */
static const char *J_LLAMA3 =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + "
    "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
    "{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant"
    "<|end_header_id|>\\n\\n' }}{% endif %}";
/* Qwen/Qwen2-7B-Instruct */
static const char *J_QWEN2 =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
/* generic ChatML (e.g. teknium/OpenHermes-2.5) */
static const char *J_CHATML =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
/* meta-llama/Llama-2-7b-chat-hf */
static const char *J_LLAMA2 =
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = "
    "messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}"
    "{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + "
    "'\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}"
    "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}";
/* mistralai/Mistral-7B-Instruct-v0.2 */
static const char *J_MISTRAL =
    "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}"
    "{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}";

Test(chat, detect)
{
    enum sl_chat_tmpl t;
    cr_assert_eq(sl_chat_detect(J_LLAMA3, &t), 0); cr_assert_eq(t, SL_CHAT_LLAMA3);
    cr_assert_eq(sl_chat_detect(J_QWEN2, &t), 0); cr_assert_eq(t, SL_CHAT_QWEN2);
    cr_assert_eq(sl_chat_detect(J_CHATML, &t), 0); cr_assert_eq(t, SL_CHAT_CHATML);
    cr_assert_eq(sl_chat_detect(J_LLAMA2, &t), 0); cr_assert_eq(t, SL_CHAT_LLAMA2);
    cr_assert_eq(sl_chat_detect(J_MISTRAL, &t), 0); cr_assert_eq(t, SL_CHAT_MISTRAL);
    cr_assert_eq(sl_chat_detect("{{ messages }}", &t), SL_EUNSUPPORTED);
    cr_assert(strstr(sl_last_error(), "not recognised") != NULL);
    cr_assert_eq(sl_chat_detect(NULL, &t), SL_EINVAL);
    cr_assert_eq(sl_chat_from_name("llama3", &t), 0); cr_assert_eq(t, SL_CHAT_LLAMA3);
    cr_assert_eq(sl_chat_from_name("chatml", &t), 0); cr_assert_eq(t, SL_CHAT_CHATML);
    cr_assert_eq(sl_chat_from_name("mistral", &t), 0); cr_assert_eq(t, SL_CHAT_MISTRAL);
    cr_assert_eq(sl_chat_from_name("llama2", &t), 0); cr_assert_eq(t, SL_CHAT_LLAMA2);
    cr_assert_eq(sl_chat_from_name("zephyr", &t), SL_EUNSUPPORTED);
    cr_assert_str_eq(sl_chat_name(SL_CHAT_LLAMA3), "llama3");
}

/* Phi-3-mini's template (from the shared vocab file) is recognised; the
 * later Phi template with a system turn is not (it renders differently). */
Test(chat, detect_phi3)
{
    sl_gguf *g = NULL;
    cr_assert_eq(sl_gguf_open_path(&g, SL_SHARED_DIR "/models/vocab/ggml-vocab-phi-3.gguf"), 0);
    const char *j;
    uint64_t len;
    cr_assert_eq(sl_gguf_get_str(g, "tokenizer.chat_template", &j, &len), 0);
    enum sl_chat_tmpl t;
    cr_assert_eq(sl_chat_detect(j, &t), 0, "%s", sl_last_error());
    cr_assert_eq(t, SL_CHAT_PHI3);
    sl_gguf_close(g);
    cr_assert_eq(sl_chat_detect("{% for message in messages %}{% if message['role'] == 'system' %}"
                                "{{'<|system|>\\n' + message['content'] + '<|end|>\\n'}}{% elif "
                                "message['role'] == 'user' %}{{'<|user|>\\n' + message['content'] + "
                                "'<|end|>\\n'}}{% endif %}{% endfor %}{{ '<|assistant|>\\n' }}", &t),
                 SL_EUNSUPPORTED);
    cr_assert_eq(sl_chat_from_name("phi3", &t), 0);
    cr_assert_eq(t, SL_CHAT_PHI3);
    cr_assert_str_eq(sl_chat_name(SL_CHAT_PHI3), "phi3");
}

/* Qwen3's template is ChatML without a default system turn (its thinking
 * markup only concerns assistant turns): chatml, also by the name "qwen3". */
Test(chat, detect_qwen3_chatml)
{
    static const char *j =
        "{%- for message in messages %}{%- if message.role == 'user' or message.role == 'system' %}"
        "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}"
        "{%- elif message.role == 'assistant' %}{%- if '</think>' in message.content %}{%- endif %}"
        "{%- endif %}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
        "{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}"
        "{%- endif %}{%- endif %}";
    enum sl_chat_tmpl t;
    cr_assert_eq(sl_chat_detect(j, &t), 0);
    cr_assert_eq(t, SL_CHAT_CHATML);
    cr_assert_eq(sl_chat_from_name("qwen3", &t), 0);
    cr_assert_eq(t, SL_CHAT_CHATML);
}

static const sl_chat_msg conv[] = {
    {"system", "You are terse."},
    {"user", " Hi there \n"},
    {"assistant", "Hello."},
    {"user", "How are you?"},
};

static void expect_render(enum sl_chat_tmpl t, const sl_chat_msg *m, size_t n, bool gen,
                          const char *bos, const char *eos, const char *want)
{
    char buf[2048];
    int64_t len = sl_chat_render(t, m, n, gen, bos, eos, buf, sizeof buf);
    cr_assert_eq(len, (int64_t)strlen(want), "%s: length %lld, want %zu:\n%s", sl_chat_name(t),
                 (long long)len, strlen(want), buf);
    cr_assert_str_eq(buf, want, "%s:\n[%s]\nwant\n[%s]", sl_chat_name(t), buf, want);
    /* size query and truncation: same length, nothing past cap */
    cr_assert_eq(sl_chat_render(t, m, n, gen, bos, eos, NULL, 0), len);
    char small[8];
    memset(small, 'x', sizeof small);
    cr_assert_eq(sl_chat_render(t, m, n, gen, bos, eos, small, 4), len);
    cr_assert_eq(small[4], 'x');
}

Test(chat, render_llama3)
{
    expect_render(SL_CHAT_LLAMA3, conv, 4, true, "<|begin_of_text|>", "<|eot_id|>",
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nHow are you?<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n");
    expect_render(SL_CHAT_LLAMA3, conv + 1, 1, false, NULL, NULL,
        "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>");
}

Test(chat, render_chatml_qwen)
{
    expect_render(SL_CHAT_CHATML, conv, 4, true, NULL, NULL,
        "<|im_start|>system\nYou are terse.<|im_end|>\n"
        "<|im_start|>user\n Hi there \n<|im_end|>\n"
        "<|im_start|>assistant\nHello.<|im_end|>\n"
        "<|im_start|>user\nHow are you?<|im_end|>\n"
        "<|im_start|>assistant\n");
    /* Qwen2 inserts its default system turn when the first message is not one */
    expect_render(SL_CHAT_QWEN2, conv + 1, 1, true, NULL, NULL,
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\n Hi there \n<|im_end|>\n"
        "<|im_start|>assistant\n");
    expect_render(SL_CHAT_QWEN2, conv, 2, false, NULL, NULL,
        "<|im_start|>system\nYou are terse.<|im_end|>\n"
        "<|im_start|>user\n Hi there \n<|im_end|>\n");
}

Test(chat, render_llama2)
{
    expect_render(SL_CHAT_LLAMA2, conv, 4, true, "<s>", "</s>",
        "<s>[INST] <<SYS>>\nYou are terse.\n<</SYS>>\n\n Hi there [/INST] Hello. </s>"
        "<s>[INST] How are you? [/INST]");
    expect_render(SL_CHAT_LLAMA2, conv + 1, 3, false, "<s>", "</s>",
        "<s>[INST] Hi there [/INST] Hello. </s><s>[INST] How are you? [/INST]");
}

Test(chat, render_mistral)
{
    expect_render(SL_CHAT_MISTRAL, conv + 1, 3, true, "<s>", "</s>",
        "<s>[INST]  Hi there \n [/INST]Hello.</s>[INST] How are you? [/INST]");
    /* no system role in this template: folded into the next user turn */
    expect_render(SL_CHAT_MISTRAL, conv, 2, false, "<s>", "</s>",
        "<s>[INST] You are terse.\n\n Hi there \n [/INST]");
}

Test(chat, render_phi3)
{
    /* the system message has no branch in the template: dropped */
    expect_render(SL_CHAT_PHI3, conv, 4, true, "<s>", "<|endoftext|>",
        "<s><|user|>\n Hi there \n<|end|>\n<|assistant|>\nHello.<|end|>\n"
        "<|user|>\nHow are you?<|end|>\n<|assistant|>\n");
    expect_render(SL_CHAT_PHI3, conv + 1, 1, false, NULL, NULL,
        "<|user|>\n Hi there \n<|end|>\n<|assistant|>\n");
}

/* Gemma 3's published template: bos; the system message is a prefix (content
 * + "\n\n", not trimmed) of the first other turn; assistant is "model";
 * turn contents trimmed. Recognised by its turn markers, also by name. */
Test(chat, render_gemma3)
{
    expect_render(SL_CHAT_GEMMA, conv, 4, true, "<bos>", "<eos>",
        "<bos><start_of_turn>user\nYou are terse.\n\nHi there<end_of_turn>\n"
        "<start_of_turn>model\nHello.<end_of_turn>\n"
        "<start_of_turn>user\nHow are you?<end_of_turn>\n<start_of_turn>model\n");
    expect_render(SL_CHAT_GEMMA, conv + 1, 2, false, NULL, NULL,
        "<start_of_turn>user\nHi there<end_of_turn>\n<start_of_turn>model\nHello.<end_of_turn>\n");
    enum sl_chat_tmpl t;
    cr_assert_eq(sl_chat_detect("{{ bos_token }}{%- for message in loop_messages -%}{{ '<start_of_turn>' + "
                                "role + '\\n' + (first_user_prefix if loop.first else \"\") }}{{ "
                                "message['content'] | trim }}{{ '<end_of_turn>\\n' }}{%- endfor -%}", &t), 0);
    cr_assert_eq(t, SL_CHAT_GEMMA);
    cr_assert_eq(sl_chat_from_name("gemma3", &t), 0);
    cr_assert_eq(t, SL_CHAT_GEMMA);
    cr_assert_str_eq(sl_chat_name(SL_CHAT_GEMMA), "gemma");
}

Test(chat, bad_input)
{
    sl_chat_msg bad[] = {{"tool", "x"}};
    char buf[64];
    cr_assert_eq(sl_chat_render(SL_CHAT_CHATML, bad, 1, true, NULL, NULL, buf, sizeof buf), SL_EINVAL);
    cr_assert(strstr(sl_last_error(), "tool") != NULL);
    sl_chat_msg nul[] = {{"user", NULL}};
    cr_assert_eq(sl_chat_render(SL_CHAT_CHATML, nul, 1, true, NULL, NULL, buf, sizeof buf), SL_EINVAL);
    cr_assert_eq(sl_chat_render((enum sl_chat_tmpl)99, conv, 1, true, NULL, NULL, buf, sizeof buf),
                 SL_EUNSUPPORTED);
    /* no messages: only the generation prompt */
    cr_assert_eq(sl_chat_render(SL_CHAT_CHATML, NULL, 0, true, NULL, NULL, buf, sizeof buf), 22);
    cr_assert_str_eq(buf, "<|im_start|>assistant\n");
}

/* A chat's next turn starts with the text of the previous one (the server's
 * prefix reuse relies on it): the conversation up to a user message with the
 * assistant opening, then the same with the reply and another user message. */
Test(chat, next_turn_extends_previous)
{
    static const enum sl_chat_tmpl all[] = { SL_CHAT_LLAMA3, SL_CHAT_CHATML, SL_CHAT_LLAMA2, SL_CHAT_MISTRAL,
                                             SL_CHAT_QWEN2, SL_CHAT_QWEN25, SL_CHAT_PHI3, SL_CHAT_GEMMA };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        char a[2048], b[2048];
        int64_t la = sl_chat_render(all[i], conv, 2, true, "<s>", "</s>", a, sizeof a);
        int64_t lb = sl_chat_render(all[i], conv, 4, true, "<s>", "</s>", b, sizeof b);
        cr_assert(la > 0 && lb > la);
        cr_assert_eq(strncmp(a, b, (size_t)la), 0, "%s: turn 1\n[%s]\nis not the start of turn 2\n[%s]",
                     sl_chat_name(all[i]), a, b);
    }
}
