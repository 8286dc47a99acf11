//! The rules of the scan, as data: pattern fragments, the words that wake a
//! rule and the words it needs near them, and [`SPECS`], one entry per rule.

use super::Severity;

// ---------------------------------------------------------------------------
// Pattern fragments. `%NAME%` in a rule's pattern is replaced by the fragment;
// `\b` becomes an ASCII word boundary (cheaper, and the text is ASCII-lowered).

/// Between two words: whitespace and line breaks, markdown emphasis, quotes,
/// table bars, inline HTML tags.
const GAP: &str = r#"(?:[\s*_`~>|#"'“”‘’]|</?(?:b|i|u|s|em|strong|span|code|mark|font|br)\s*/?>|&nbsp;)+"#;

/// Verbs that drop instructions.
const OVR_VERB: &str = r"(?:ignore|disregard|forget|neglect|discard|abandon|dismiss)";
/// Words before the qualifier: "ignore ALL OF THE previous instructions".
const PRE: &str = r"(?:all|any|every|each|the|your|my|of|these|those|that|this|its|our|their|and)";
/// Which instructions: "PREVIOUS instructions".
const QUAL: &str = r"(?:previous|previously%GAP%(?:given|provided|received|stated)|prior|above|earlier|preceding|foregoing|former|original|initial|system|developer|safety|given)";
/// Words between the qualifier and the target: "previous SYSTEM instructions".
const FILL: &str = r"(?:user|users|system|ai|assistant|developer|given|set|of|the|your|my|all|and|or|safety|security|moderation|ethical|ethics|original|chat|model|openai|anthropic|prompt|operator|admin|administrator|initial|above|previous|prior|earlier)";
/// What is dropped.
const TARGET: &str = r"(?:instructions?|rules|prompts?|directives?|guidelines|guidance|commands|orders|constraints|context|messages|programming|policies|restrictions|guardrails|directions|text|content|input)";

/// Secrets named in words or as paths.
const SECRET: &str = r"(?:(?:api|access|secret|private|ssh|signing|encryption|master)[\s_-]*keys?|(?:api|access|auth|authentication|bearer|github|gitlab|openai|session|refresh|oauth|secret|slack|discord|telegram|npm|pypi|personal%GAP%access)[\s_-]*tokens?|passwords?|passwd|passphrases?|credentials|creds|login%GAP%details|secrets|client[\s_-]*secrets?|seed[\s_-]*phrases?|recovery[\s_-]*phrases?|mnemonic|keychain|wallet[\s_-]*(?:keys?|seed)|session[\s_-]*cookies?|env(?:ironment)?[\s_-]*(?:variables|vars)|%SECRET_PATH%)";
/// Secret files: `~/.ssh/id_rsa` (not `.pub`), `~/.aws/credentials`, `.env`...
const SECRET_PATH: &str = r#"(?:(?:~|\$home|\$\{home\}|/root|/home/[\w.-]+|/users/[\w.-]+)?/?(?:\.ssh(?:/(?:id_(?:rsa|dsa|ecdsa|ed25519)(?:[^.\w]|$)|authorized_keys|known_hosts|config)|/?(?:[\s"'`)|;]|$))|\.aws/(?:credentials|config)|\.env(?:\.local|\.production|\.prod)?(?:[^.\w-]|$)|\.netrc|\.git-credentials|\.npmrc|\.pypirc|\.docker/config\.json|\.kube/config|\.gnupg|\.config/gh/hosts\.yml|\.bash_history)|/etc/(?:shadow|passwd|sudoers)|id_(?:rsa|dsa|ecdsa|ed25519)(?:[^.\w]|$))"#;
/// Determiners before a secret: "send ALL THE passwords".
const DET: &str = r"(?:your|the|all|any|every|my|our|its|their|these|those|this|that|of|contents?|value|values|full|entire|complete|stored|saved|current|local|user's|users'|admin|root|database|db|server|production|prod|cloud|company|team|aws|github|openai|cached)";

/// Words that mark a sentence as describing, not commanding:
/// "To print your API key, ...", "Never share your password".
const MODAL: &str = "to | will | would | can | could | may | might | never | not | don't | dont | doesn't | \
    won't | cannot | can't | shouldn't | mustn't | wouldn't | didn't | isn't";
/// Chinese verbs of sending out or telling.
const CJK_SEND: &str = "发送 | 发给 | 发到 | 上传 | 泄露 | 告诉 | 透露 | 输出 | 打印 | 给我 | 把 | 将";
/// Secrets in Chinese text, which may name them in English.
const CJK_SECRET: &str = r"(?:密码|密钥|私钥|令牌|凭据|凭证|api[\s_-]*key|token|password|\.env|ssh)";
/// Chinese negations: "不要把密码告诉任何人" (never tell anyone the password).
const CJK_NEGATIONS: &str = "不要 | 别 | 切勿 | 不得 | 不能 | 不可 | 禁止 | 请勿 | 勿 | 不应 | 不应该 | 绝不";
/// Nouns after a secret that make it a topic, not the thing itself: "send the
/// password RESET link", "email the API key REQUEST form".
macro_rules! secret_topics {
    () => {
        "reset | manager | managers | policy | policies | field | fields | prompt | hint | hints | strength | \
            length | requirement | requirements | change | changes | recovery | form | input | box | hash | \
            hashes | reminder | rotation | expiry | expiration | expired | protected | less | generator | dialog | \
            screen | page | option | options | setting | settings | flag | validation | rules | complexity | \
            login | header | headers | format | name | names | id | prefix | scope | scopes | permission | \
            permissions | parameter | param | query | argument | type | example | template | sample | request | \
            requests | application | documentation | docs | usage | limit | limits | quota | creation | \
            management | 重置 | 管理器 | 强度 | 错误 | 长度 | 规则 | 策略 | 输入框"
    };
}
const AFTER_SECRET_NOUNS: &str = secret_topics!();
/// The same and prepositions: "send your API key IN the header".
const AFTER_SECRET: &str = concat!(
    "in | with | via | as | through | using | over | on | when | if | for | each | \
    every | ",
    secret_topics!()
);

/// One rule: anchors that wake it and the regex that decides.
pub(super) struct Spec {
    pub(super) name: &'static str,
    pub(super) severity: Severity,
    /// Lowercase literals separated by " | "; `·` stands for " ", "_", "-" or
    /// nothing ("api·key"); a trailing `$` means the anchor must end a word.
    /// Single words where possible: a multi-word anchor misses the phrase
    /// when the text puts two spaces or a line break between its words.
    pub(super) anchors: &'static str,
    /// Bytes of text before an anchor the pattern may need.
    pub(super) back: usize,
    /// Bytes after the anchor's start the pattern may reach.
    pub(super) ahead: usize,
    /// The anchor must begin a line (after at most `back` bytes of `#*>[(<_-` and spaces).
    pub(super) line_start: bool,
    pub(super) pattern: &'static str,
    /// A match is dropped when the word just before it is one of these.
    pub(super) veto_before: &'static str,
    /// ...or when the word just after it is one of these.
    pub(super) veto_after: &'static str,
    /// Cheap co-occurrence tests from the same automaton pass: the regex runs
    /// only when each of these has a word near the anchor.
    pub(super) needs: &'static [Need],
    /// `(before, after)`: `pattern` matches at the anchor, `before` must match
    /// in the `back` bytes before it (its last match starts the finding) and
    /// `after` in the `ahead` bytes after it. Avoids `.{0,n}` gaps, which make
    /// regexes slow.
    pub(super) sandwich: Option<(&'static str, &'static str)>,
    /// The window ends at the first occurrence of this after the anchor (`-->`
    /// for an HTML comment), and needs are looked for only inside it.
    pub(super) until: Option<&'static str>,
    /// The pattern starts with a word of the first need (a verb): the window
    /// starts at the first such word in range, which keeps it short.
    pub(super) start_at_need: bool,
}

/// At least one of `words` starts within `before` bytes before the anchor's
/// start or `after` bytes after it. Words that start with a letter must start
/// a word; a trailing `$` means the word must also end there ("ai$" is not "aim").
pub(super) struct Need {
    pub(super) words: &'static str,
    pub(super) before: usize,
    pub(super) after: usize,
}

/// The start of both `new_instructions` patterns: a line or sentence start, an optional
/// "important:", "new instructions" and its separator; the verb list follows.
macro_rules! new_instructions_head {
    () => {
        r"(?:\n|[.!?]\s)(?:[\s#*>\[(_-])*(?:(?:important|urgent|attention|note|notice|warning|update|alert)\s*[:!\-—]+(?:[\s*_])*)?(?:new|updated|revised|real|actual|additional|secret|hidden|overriding|override|priority|true|latest|changed|different)%GAP%(?:system%GAP%)?(?:instructions?|directives?|orders|prompt)(?:[\s*_\])])*[:\-—]+(?:%GAP%)?(?:"
    };
}

const fn rule(
    name: &'static str,
    severity: Severity,
    anchors: &'static str,
    back: usize,
    ahead: usize,
    pattern: &'static str,
) -> Spec {
    Spec {
        name,
        severity,
        anchors,
        back,
        ahead,
        line_start: false,
        pattern,
        veto_before: "",
        veto_after: "",
        needs: &[],
        sandwich: None,
        until: None,
        start_at_need: false,
    }
}

// Need words. Each list must cover every way its rule's regex can match
// (a superset), or matches are missed; they only save regex runs.

/// Any `%QUAL%` word or "your", for `override_instructions`.
const QUAL_WORDS: &str = "previous | prior | above | earlier | preceding | foregoing | former | original | \
    initial | system | developer | safety | given | your";
/// The verbs that start `exfiltrate_secrets` matches.
const SECRET_VERBS: &str = "reveal | leak | exfiltrate | disclose | dump | expose | send | mail | e-mail | email | \
    post | upload | forward | transmit | share | paste | print$ | output$ | show$ | display$ | tell$ | give$ | \
    echo$ | submit | copy | pipe | sync";
/// Where a secret could be sent: a URL, an e-mail address, "the following URL".
const DESTINATIONS: &str = ":// | @ | url | webhook | endpoint | inbox";
/// The verbs that start `leak_system_prompt` matches.
const PROMPT_VERBS: &str = "reveal | print | output | repeat | show | display | dump | leak | share | tell | \
    give | write | recite | reproduce | disclose | echo | send | paste | spell | expose | divulge | quote";
/// Who `address_to_ai` addresses.
const AI_WORDS: &str = "ai$ | ais$ | a.i. | llm | chatbot | gpt | assistant | agent | bot$ | bots$ | model | intelligence | \
    crawler | scraper | 人工智能 | 语言模型 | 大模型 | 助手 | 智能体 | 机器人";
/// What follows "AI assistant:" in `address_to_ai`.
const AI_IMPERATIVES: &str = "you$ | please | not$ | don't | always | never | ignore | sure$ | remember";
/// The negations of `conceal_from_user`.
const NEGATIONS: &str = "not$ | dont$ | never | without | keep | hide | 不要 | 别 | 切勿 | 不得 | 不能 | 无需 | 不必 | 瞒着 | 保密 | don't | \
        shouldn't | mustn't";
/// The qualifiers of `new_instructions`.
const NEW_WORDS: &str = "new | updated | revised | real | actual | additional | secret | hidden | overrid | \
    priority | true | latest | changed | different";
/// What an HTML comment must contain for `html_comment_instruction`.
const COMMENT_WORDS: &str = "ignore | instruction | note | message | memo | reminder | ai$ | llm | gpt | claude | copilot | \
    gemini | model | assistant | agent | you$ | prompt";

const OVR_ANCHORS: &str = "ignore | disregard | forget | neglect | discard | abandon | dismiss";
/// Secret files (the anchors of `%SECRET_PATH%`).
macro_rules! path_anchors {
    () => {
        ".ssh | .aws/ | .env | id_rsa | id_dsa | id_ecdsa | id_ed25519 | .netrc | .git-credentials | .npmrc | \
            .pypirc | .docker/config | .kube/config | .gnupg | .config/gh/ | .bash_history | /etc/shadow | \
            /etc/passwd | /etc/sudoers"
    };
}
const PATH_ANCHORS: &str = path_anchors!();
/// Secrets in words (the anchors of `%SECRET%`) and files.
const SECRET_ANCHORS: &str = concat!(
    "key$ | keys$ | api·key | access·key | secret·key | private·key | ssh·key | signing key | encryption key | master key | \
        token | password | passwd | passphrase | credentials | creds | login details | secrets | client·secret | \
        seed·phrase | recovery·phrase | mnemonic | keychain | wallet | session·cookie | env·var | \
        environment·var | ",
    path_anchors!()
);
const PROMPT_ANCHORS: &str = "prompt$ | prompts$ | preprompt | instruction | message$ | messages$ | directive | \
    programming";

/// Every rule of the scan.
pub(super) static SPECS: &[Spec] = &[
    // ---- Block: overriding instructions -----------------------------------
    Spec {
        needs: &[Need { words: QUAL_WORDS, before: 0, after: 220 }],
        ..rule(
            "override_instructions",
            Severity::Block,
            OVR_ANCHORS,
            0,
            220,
            // ignore (all of the) previous (system) instructions
            r"\b%OVR_VERB%%GAP%(?:%PRE%%GAP%)*%QUAL%%GAP%(?:(?:and|or|&|/)%GAP%%QUAL%%GAP%)?(?:%FILL%%GAP%){0,2}%TARGET%\b|\b(?:%OVR_VERB%|override|overrule|bypass)%GAP%(?:all%GAP%)?(?:of%GAP%)?your%GAP%(?:(?:previous|prior|current|existing|original|initial|system|safety|ethical|content|core|built-in|default|internal)%GAP%){0,2}(?:%TARGET%|training|system%GAP%prompt)\b",
        )
    },
    Spec {
        veto_before: "can | may | safely | could | might",
        needs: &[Need { words: "above | told | given | instructed", before: 0, after: 160 }],
        ..rule(
            "override_instructions",
            Severity::Block,
            OVR_ANCHORS,
            0,
            160,
            // forget everything above / everything you were told
            r"\b%OVR_VERB%%GAP%(?:all%GAP%of%GAP%the%GAP%above|(?:everything|anything|all)%GAP%(?:(?:written|said|stated|that%GAP%was%GAP%said)%GAP%)?above|everything%GAP%(?:that%GAP%)?you(?:'ve|%GAP%have|%GAP%were|%GAP%had)%GAP%(?:been%GAP%)?(?:told|given|instructed))\b",
        )
    },
    Spec {
        needs: &[Need {
            words: "prompt | instruction | guideline | filter | polic | restriction | rule | guardrail",
            before: 0,
            after: 200,
        }],
        ..rule(
            "override_instructions",
            Severity::Block,
            "override | overrule | bypass | circumvent",
            0,
            200,
            // override the system prompt / bypass your safety guidelines
            r"\b(?:override|overrule|bypass|circumvent)%GAP%(?:(?:all|any|the|of|your|its)%GAP%)*(?:(?:previous|prior|system|safety|security|ethical|original|initial)%GAP%){0,2}(?:system%GAP%prompt|prompt%GAP%instructions|(?:safety|ethical)%GAP%(?:guidelines|filters?|polic(?:y|ies)|restrictions|rules|guardrails)|guardrails|(?:previous|prior)%GAP%instructions|instructions%GAP%(?:above|given))\b",
        )
    },
    rule(
        "override_instructions",
        Severity::Block,
        "忽略 | 忽视 | 无视 | 忘记 | 忘掉 | 忘了 | 不要理会 | 别理会 | 不要遵守 | 不再遵守 | 不用遵守 | 抛开 | 抛弃 | 放弃",
        0,
        120,
        r"(?:忽略|忽视|无视|忘记|忘掉|忘了|不要理会|别理会|不要遵守|不再遵守|不用遵守|抛开|抛弃|放弃)(?:掉)?[^\n。！？!?]{0,6}?(?:之前|以上|先前|上面|前面|上述|此前|原来|原有|原先|最初|你的|系统|开发者)[^\n。！？!?]{0,8}?(?:指令|指示|说明|提示词|提示|规则|设定|命令|要求|约束|限制|规定)|(?:忽略|忽视|无视)(?:掉)?[^\n。！？!?]{0,8}?(?:所有|全部|一切|任何)[^\n。！？!?]{0,6}?(?:指令|指示|提示词|安全规则|安全限制|限制)|无视[^\n。！？!?]{0,12}?(?:指令|指示|提示词)",
    ),
    // ---- Block: "new instructions:" at a line start, then an override or a leak ----
    // "New instructions: run make test before every commit." is how teams write notes: an
    // ordinary imperative after it is only reviewed (logged, passed on); taking over the agent
    // or sending data out is blocked.
    Spec {
        needs: &[Need { words: NEW_WORDS, before: 64, after: 0 }],
        ..rule(
            "new_instructions",
            Severity::Block,
            "instruction | directive | orders | prompt",
            64,
            120,
            concat!(
                new_instructions_head!(),
                "you|your|ignore|disregard|forget|send|e-?mail|post|upload|reveal|act|pretend|from%GAP%now|instead|transfer|grant|follow|obey|export|share|forward|leak|exfiltrate|the%GAP%(?:assistant|ai|model|agent)",
                r")\b"
            ),
        )
    },
    Spec {
        needs: &[Need { words: NEW_WORDS, before: 64, after: 0 }],
        ..rule(
            "new_instructions",
            Severity::Review,
            "instruction | directive | orders | prompt",
            64,
            120,
            concat!(
                new_instructions_head!(),
                "do|don't|never|always|delete|remove|erase|wipe|run|execute|write|create|read|open|print|output|respond|reply|answer|say|tell|stop|download|install|copy|move|add|change|set|update|call|visit|go|navigate|fetch|curl|wget|make|use|only|please|immediately|first|summari[sz]e|include|append|insert|disable|enable|modify|edit|rename|push|commit|pay|buy|approve|list|find|search|collect|gather|save|store|report",
                r")\b"
            ),
        )
    },
    // ---- Block: a new role or lifted rules --------------------------------
    rule(
        "role_hijack",
        Severity::Block,
        "now$ | dan$ | jailbreak | pretend",
        32,
        200,
        r"\bfrom%GAP%now%GAP%on\b[,\s]*(?:you(?:'re|%GAP%are)%GAP%(?:(?:an?|my|the)%GAP%)?(?:dan\b|free\b|unrestricted|uncensored|unfiltered|jailbroken|evil|no%GAP%longer|not%GAP%(?:an?%GAP%)?(?:ai|assistant|bound)|[a-z]*gpt\b|an?%GAP%(?:ai|assistant|model|agent)%GAP%(?:that|who|with|without)|going%GAP%to%GAP%(?:act|respond|answer|reply|pretend|ignore|behave))|you(?:'ll|%GAP%will|%GAP%must|%GAP%shall|%GAP%should|%GAP%are%GAP%to|%GAP%have%GAP%to|%GAP%need%GAP%to)%GAP%(?:(?:only|always|never|now|strictly)%GAP%)?(?:act|behave|(?:respond|answer|reply|speak|talk)%GAP%(?:only%GAP%)?(?:as|like|without|with%GAP%no|in%GAP%character|freely|uncensored|unfiltered)|pretend|ignore|disregard|obey|follow%GAP%my|roleplay|simulate|refer%GAP%to%GAP%yourself|call%GAP%yourself|identify%GAP%as|comply|do%GAP%anything|be%GAP%(?:an?%GAP%)?(?:dan|unrestricted|evil|jailbroken|free)))\b|\byou(?:'re|%GAP%are)%GAP%now%GAP%(?:(?:in|an?|the|my|operating%GAP%in|running%GAP%in)%GAP%)?(?:dan\b|developer%GAP%mode|dev%GAP%mode|god%GAP%mode|jailbroken|jailbreak|unrestricted|unfiltered|uncensored|unlocked|free%GAP%(?:from|of)\b|freed%GAP%from|no%GAP%longer%GAP%(?:bound|restricted|limited|an?%GAP%(?:ai|assistant)|required%GAP%to%GAP%follow|subject%GAP%to)|not%GAP%(?:an?%GAP%)?(?:ai|assistant|bound|restricted|chatgpt|claude)\b|evil|[a-z]*gpt\b|an?%GAP%(?:unrestricted|unfiltered|uncensored|different|new)%GAP%(?:ai|assistant|model|agent|persona))|\bdo%GAP%anything%GAP%now\b|\b(?:dan|jailbreak)%GAP%mode\b|\bpretend%GAP%(?:that%GAP%)?you%GAP%(?:are|have)%GAP%(?:no|not)%GAP%(?:any%GAP%)?(?:restrictions|rules|guidelines|limits|limitations|filters|policies|instructions|ethics|morals)\b",
    ),
    rule(
        "role_hijack",
        Severity::Block,
        "你现在 | 从现在 | 开发者模式 | 越狱模式 | 无限制模式 | 无审查模式 | dan模式",
        24,
        80,
        r"你现在(?:是|扮演|作为|成为|变成)(?:一个|一名|一位|个|名|位)?[^\n。，,？?]{0,12}?(?:dan|助手|ai|人工智能|模型|机器人|角色|黑客|专家|系统|管理员|模式|自由|不受|没有|无|越狱|开发者)|从现在(?:开始|起)[，,\s]*你(?:将|要|必须|只|就是|是|应该|需要|不再|会)|(?:进入|开启|启用|切换到|处于)(?:了)?(?:dan|开发者|越狱|无限制|无审查)模式",
    ),
    // ---- Block: fake role and turn markers ---------------------------------
    Spec {
        line_start: true,
        ..rule(
            "fake_system_role",
            Severity::Block,
            "system",
            24,
            200,
            r"\n(?:[ \t#*>\[(<_-])*system(?:%GAP%(?:prompt|message|instructions?|note|override|notice|update|alert|directive))?(?:(?:[ \t*_])*:|(?:[ \t*_])*[\])>](?:[ \t*_])*:?)(?:[ \t*_])*(?:\r?\n(?:[ \t*_>])*)?(?:(?:important|urgent|note|attention|override|update)[ \t]*[:!\-—]+(?:[ \t*_])*)?(?:you(?:'re|'ll|%GAP%(?:are|must|will|should|shall|need%GAP%to|have%GAP%to|now|may%GAP%not|cannot|can't|do%GAP%not|don't|no%GAP%longer|only))|your%GAP%(?:task|role|job|goal|new|instructions|purpose|only|mission|objective|primary)|(?:the%GAP%)?(?:assistant|ai|model|agent|llm)%GAP%(?:must|should|will|is|has|may)|ignore|disregard|forget|from%GAP%now%GAP%on|new%GAP%instructions|override|pretend|act%GAP%as|do%GAP%not|don't|never|always|obey|follow%GAP%these|respond|reply|answer%GAP%only|as%GAP%an%GAP%ai|assistant)\b",
        )
    },
    rule(
        "fake_turn_marker",
        Severity::Block,
        "<|im_start|> | <|system|> | <|user|> | <|assistant|> | <|developer|> | [inst] | [/inst] | <<sys>> | \
            <</sys>> | <|start_header_id|> | <start_of_turn>",
        0,
        48,
        r"<\|im_start\|>\s*(?:system|user|assistant|developer|tool)\b|<\|(?:system|user|assistant|developer)\|>|\[/inst\]|<s>\s*\[inst\]|\[inst\]\s*(?:<<sys>>|(?:you|your|ignore|disregard|forget|system|new|from|act|pretend|now|always|never|do)\b)|<</?sys>>|<\|start_header_id\|>\s*(?:system|user|assistant|developer|ipython|tool)\b|<start_of_turn>\s*(?:user|model|system)\b",
    ),
    rule(
        "fake_tool_tag",
        Severity::Block,
        "<tool_ | </tool_ | <function_ | </function_ | <|tool_ | <|python_tag|> | <system-reminder | \
            </system-reminder",
        0,
        120,
        r"</?(?:tool_(?:calls?|results?|use|uses|response|responses|output|outputs|code)|function_(?:calls?|results?|responses?))(?:\s[^>\n]*)?>|<\|(?:tool_calls?|tool_response|tool_result|python_tag)\|>|</?system-reminder>",
    ),
    // ---- Block: exfiltration of secrets -------------------------------------
    Spec {
        veto_before: MODAL,
        veto_after: AFTER_SECRET,
        needs: &[Need { words: SECRET_VERBS, before: 56, after: 0 }],
        start_at_need: true,
        ..rule(
            "exfiltrate_secrets",
            Severity::Block,
            SECRET_ANCHORS,
            64,
            48,
            // reveal/send (all) (the) secrets; print/show YOUR secrets; give ME the password
            r"\b(?:reveal|leak|exfiltrate|disclose|dump|expose|send|e-?mail|post|upload|forward|transmit|share|paste)%GAP%(?:(?:me|us|over|out|back)%GAP%)?(?:%DET%%GAP%)+%SECRET%|\b(?:print|output|show|display|tell|give|echo)%GAP%(?:(?:me|us)%GAP%(?:%DET%%GAP%)*|(?:(?:out|back)%GAP%)?(?:(?:all|of|the|contents?|full|entire|complete|value|values)%GAP%)*your%GAP%(?:%DET%%GAP%){0,2})%SECRET%",
        )
    },
    Spec {
        veto_before: MODAL,
        veto_after: AFTER_SECRET_NOUNS,
        needs: &[
            Need { words: SECRET_VERBS, before: 200, after: 0 },
            Need { words: DESTINATIONS, before: 0, after: 200 },
        ],
        start_at_need: true,
        // send ... <secret> ... to https://... / to someone@example.com
        sandwich: Some((
            r"\b(?:send|post|upload|forward|e-?mail|mail|transmit|exfiltrate|submit|copy|pipe|sync|leak|share|paste)\b",
            r"\b(?:to|at|into|onto|via|using)%GAP%(?:(?:https?|ftps?|wss?)://|<?[\w.+-]+@[\w-]+\.[\w.-]+|(?:this|the%GAP%following|my|our|that)%GAP%(?:url|webhook|endpoint|inbox))",
        )),
        ..rule("exfiltrate_secrets", Severity::Block, SECRET_ANCHORS, 200, 200, r"\A%SECRET%")
    },
    Spec {
        ..rule(
            "exfiltrate_secrets",
            Severity::Block,
            PATH_ANCHORS,
            220,
            200,
            // curl -d @~/.ssh/id_rsa ... / cat ~/.aws/credentials | curl ... / nc host < ~/.ssh/id_rsa
            r#"\b(?:curl|wget|invoke-webrequest|iwr|invoke-restmethod|irm)\b[^\n]*?(?:\s(?:-d|--data(?:-binary|-raw|-urlencode|-ascii)?|-f|--form(?:-string)?|-t|--upload-file|--post-file|--body-file|--post-data|-infile|-body)[\s=]*["']?(?:[\w.\[\]-]+=)?[@<]?|\$\(\s*(?:cat|base64|<)\s*|`\s*(?:cat|base64)\s+)%SECRET_PATH%|\b(?:cat|base64|tar|xxd|gzip|zip|head|tail|get-content)\b[^\n|;&]*?%SECRET_PATH%[^\n|;&]*?\|(?:[^\n|]*\|)?\s*(?:curl|wget|nc|ncat|netcat|socat|telnet|ssh|openssl%GAP%s_client|invoke-webrequest|iwr)\b|\b(?:nc|ncat|netcat|socat|telnet)\b[^\n]*?<\s*%SECRET_PATH%|\b(?:scp|rsync|sftp)\b[^\n]*?%SECRET_PATH%[^\n]*?[\w.-]+@[\w.-]+:"#,
        )
    },
    // ---- Block: revealing the prompt ---------------------------------------
    Spec {
        veto_before: MODAL,
        veto_after: "for | on | about",
        needs: &[Need { words: PROMPT_VERBS, before: 110, after: 0 }],
        start_at_need: true,
        ..rule(
            "leak_system_prompt",
            Severity::Block,
            PROMPT_ANCHORS,
            110,
            60,
            r"\b(?:reveal|print|output|repeat|show|display|dump|leak|share|tell|give|write%GAP%out|recite|reproduce|disclose|echo|send|paste|spell%GAP%out|expose|divulge|quote)%GAP%(?:(?:out|back|me|us|verbatim|exactly|word%GAP%for%GAP%word)%GAP%){0,2}(?:(?:your|the|all|full|entire|complete|exact|whole|of|everything|in|from|contents|text|current)%GAP%)*(?:(?:original|initial|hidden|secret|internal|full|exact|entire|complete|confidential|real|actual)%GAP%)?(?:system|developer|hidden|secret|internal|initial|original|confidential|pre)(?:%GAP%|-|_)?(?:prompts?|instructions|messages?|directives)\b|\b(?:reveal|print|output|repeat|dump|leak|recite|reproduce|disclose|echo|divulge|show|display|tell%GAP%me)%GAP%(?:(?:out|back|me|us|verbatim|exactly)%GAP%){0,2}(?:(?:all|of|the|full|entire|complete|exact|whole)%GAP%)*your%GAP%(?:(?:full|entire|complete|exact|original|initial|hidden|secret|system|internal|current|first)%GAP%){0,2}(?:prompts?|instructions|programming|directives)\b",
        )
    },
    Spec {
        veto_before: MODAL,
        needs: &[Need {
            words: "repeat | print | output | reproduce | recite | echo | reveal | dump",
            before: 110,
            after: 0,
        }],
        start_at_need: true,
        // "must reproduce the above copyright notice": `above` as an adjective of a document's part.
        veto_after: "copyright | notice | notices | license | licence | conditions | disclaimer | list | paragraph | \
            paragraphs | example | examples | table | steps | command | commands | code | error | errors | section | \
            sections | figure | output",
        ..rule(
            "leak_system_prompt",
            Severity::Block,
            "above | far$ | before$ | beginning | start$ | starting$",
            110,
            60,
            // repeat the words above starting with "You are"
            r#"\b(?:repeat|print|output|reproduce|recite|echo|reveal|dump)%GAP%(?:(?:back|out|verbatim|exactly|word%GAP%for%GAP%word)%GAP%)?(?:(?:all|of|the|everything|every)%GAP%)*(?:(?:words|text|messages?|conversation|instructions|tokens|lines)%GAP%)?(?:(?:written|given|you%GAP%were%GAP%given|you%GAP%received|that%GAP%appears?|you%GAP%see)%GAP%)?(?:above|before%GAP%this|so%GAP%far|prior%GAP%to%GAP%this|from%GAP%the%GAP%(?:beginning|start)|starting%GAP%(?:with|from)%GAP%["'“]?you%GAP%are)\b"#,
        )
    },
    Spec {
        veto_before: CJK_NEGATIONS,
        ..rule(
            "leak_system_prompt",
            Severity::Block,
            "系统提示词 | 系统指令 | 初始指令 | 原始指令 | 隐藏指令 | 你的提示词 | 你的指令 | 完整提示词",
            60,
            90,
            r"(?:输出|打印|显示|告诉我|泄露|重复|复述|透露|展示|列出|写出|发给我|给我看)[^\n。！？!?]{0,10}?(?:系统提示词|系统指令|初始指令|原始指令|隐藏指令|你的提示词|你的指令|完整提示词)|(?:把|将)[^\n。！？!?]*?(?:系统提示词|系统指令|初始指令|原始指令|隐藏指令|你的提示词|你的指令|完整提示词)[^\n。！？!?]{0,12}?(?:输出|打印|显示|告诉|泄露|重复|复述|发给|透露|展示|写出)",
        )
    },
    Spec {
        veto_before: CJK_NEGATIONS,
        veto_after: AFTER_SECRET_NOUNS,
        needs: &[Need { words: CJK_SEND, before: 60, after: 90 }],
        ..rule(
            "exfiltrate_secrets",
            Severity::Block,
            "密码 | 密钥 | 私钥 | 令牌 | 凭据 | 凭证 | api·key | token | password | .env | ssh",
            60,
            90,
            r"(?:发送|发给|发到|上传|泄露|告诉我|透露|输出|打印|给我)[^\n。！？!?]{0,12}?%CJK_SECRET%|(?:把|将)[^\n。！？!?]{0,8}?%CJK_SECRET%[^\n。！？!?]{0,12}?(?:发送|发给|发到|上传|泄露|告诉|透露|输出|打印|给我)",
        )
    },
    // ---- Review -------------------------------------------------------------
    Spec {
        needs: &[Need { words: AI_WORDS, before: 0, after: 64 }],
        ..rule(
            "address_to_ai",
            Severity::Review,
            "note$ | message | instruction | reminder | memo$ | attention | hey$ | hello | dear$ | psst | if you | \
                any ai | any llm | any language | all ai | every ai | 如果你是",
            0,
            140,
            // note to the AI / if you are an LLM / any AI reading this
            r"\b(?:(?:note|message|instructions?|reminder|memo)%GAP%(?:to|for)|attention|hey|hello|dear|psst)(?:[\s,:!]|%GAP%)*(?:(?:the|any|all|every|you|my|our|this|automated|autonomous)%GAP%){0,2}(?:ai|a\.i\.|llms?|ai%GAP%(?:assistant|agent|model|system)s?|language%GAP%models?|large%GAP%language%GAP%models?|chatbots?|gpt|chatgpt|assistants?|agents?|bots?)\b|\bif%GAP%you(?:'re|%GAP%are|%GAP%happen%GAP%to%GAP%be)%GAP%(?:(?:an?|the|also)%GAP%)?(?:(?:ai|automated|autonomous|large|helpful|artificial)%GAP%){0,2}(?:ai|llm|language%GAP%model|assistant|agent|chatbot|bot|model|gpt|intelligence)\b|\b(?:any|all|every)%GAP%(?:ai|llm|language%GAP%model|ai%GAP%(?:agent|assistant|model|system)|chatbot|crawler|scraper)s?%GAP%(?:reading|processing|parsing|summari[sz]ing|scraping|crawling|seeing|that%GAP%reads?|which%GAP%reads?)\b|如果你是(?:一个|一名|个)?(?:ai|人工智能|语言模型|大模型|大语言模型|助手|智能体|机器人)",
        )
    },
    Spec {
        needs: &[Need { words: AI_IMPERATIVES, before: 0, after: 48 }],
        ..rule(
            "address_to_ai",
            Severity::Review,
            "ai: | ai, | ais: | llm: | llm, | llms: | assistant: | assistant, | assistants: | agent: | agent, | \
                agents: | model: | model, | models: | chatbot: | bot: | gpt: | language model: | language model,",
            0,
            80,
            // AI assistant: you must ...
            r"\b(?:ai|llms?|ai%GAP%(?:assistant|agent|model)s?|assistants?|agents?|models?|chatbots?|bots?|gpt|language%GAP%models?)\s*[:,]%GAP%(?:you%GAP%(?:must|should|will|need%GAP%to|have%GAP%to|are%GAP%to|shall|are%GAP%required%GAP%to|are%GAP%instructed%GAP%to)|please|do%GAP%not|don't|always|never|ignore|make%GAP%sure|remember%GAP%to|be%GAP%sure%GAP%to|before%GAP%you|when%GAP%you|you%GAP%are%GAP%(?:now|a|an|the))\b",
        )
    },
    Spec {
        needs: &[Need { words: NEGATIONS, before: 64, after: 80 }],
        ..rule(
            "conceal_from_user",
            Severity::Review,
            "user$ | human$ | operator$ | 用户 | 使用者",
            80,
            60,
            r"\b(?:do%GAP%not|don't|dont|never|must%GAP%not|should%GAP%not|shouldn't|mustn't)%GAP%(?:ever%GAP%)?(?:tell|inform|(?:mention|reveal|report|explain)%GAP%(?:this|it|anything|that)%GAP%to)%GAP%(?:the|your)%GAP%(?:user|human|operator)\b|\bwithout%GAP%(?:ever%GAP%)?(?:telling|informing|notifying|alerting|warning)%GAP%(?:the|your)%GAP%(?:user|human|operator)\b|\b(?:do%GAP%not|don't|dont|never|without)%GAP%let(?:ting)?%GAP%(?:the|your)%GAP%(?:user|human|operator)%GAP%(?:know|find%GAP%out|see|notice|suspect)\b|\b(?:keep|hide)%GAP%(?:this|it|that|these|everything)%GAP%(?:(?:secret|hidden|confidential)%GAP%)?from%GAP%(?:the|your)%GAP%(?:user|human|operator)\b|\b(?:the|your)%GAP%(?:user|human|operator)%GAP%(?:must|should|shall|will|may)%GAP%(?:not|never)%GAP%(?:know|find%GAP%out|be%GAP%told|learn|see|suspect|notice|be%GAP%informed)\b|(?:不要|别|切勿|不得|不能|无需|不必)(?:告诉|通知|提醒|告知|让)(?:用户|使用者)|瞒着(?:用户|使用者)|对(?:用户|使用者)保密",
        )
    },
    rule(
        "act_as",
        Severity::Review,
        "act$ | behave$ | pretend | roleplay | role-play | role play | impersonate | 扮演 | 假装",
        40,
        60,
        r"(?:\n|[.!?:;]%GAP%|\byou%GAP%(?:will|must|should|shall|now|are%GAP%to|have%GAP%to|need%GAP%to|are%GAP%going%GAP%to)%GAP%|\bplease%GAP%|\bnow%GAP%|\bi%GAP%want%GAP%you%GAP%to%GAP%)(?:[\s*_`>#-])*(?:(?:now|please)%GAP%)?(?:(?:act|behave)%GAP%(?:as|like)%GAP%(?:an?|the|my|if|though|dan)\b|pretend%GAP%(?:to%GAP%be|(?:that%GAP%)?you(?:'re|%GAP%are))\b|role(?:-|%GAP%)?play%GAP%as\b|impersonate\b)|(?:请|你(?:要|必须|现在|将|需要)|现在)(?:你)?(?:扮演|假装)(?:成|是|你是)?(?:一个|一名|一位|我的|dan)",
    ),
    Spec {
        needs: &[Need { words: COMMENT_WORDS, before: 0, after: 600 }],
        until: Some("-->"),
        ..rule(
            "html_comment_instruction",
            Severity::Review,
            "<!--",
            0,
            600,
            r"<!--(?:[^-]|-[^-])*?(?:\bignore%GAP%(?:all|the|previous|prior|above|any|your)\b|\b(?:new|hidden|secret|important|additional|updated|real)%GAP%instructions?\b|\b(?:instructions?|note|message|memo|reminder)%GAP%(?:for|to)%GAP%(?:(?:the|any|all)%GAP%)?(?:ai|assistant|agent|llm|model|bot|chatgpt|claude|gpt)s?\b|\b(?:ai|llms?|assistants?|agents?|chatgpt|claude|gpt|copilot|gemini|language%GAP%models?)\s*[:,]|\bif%GAP%you(?:'re|%GAP%are)%GAP%(?:an?%GAP%)?(?:ai|llm|language%GAP%model|assistant|agent|bot)\b|\bsystem%GAP%prompt\b)",
        )
    },
    rule(
        "chat_special_token",
        Severity::Review,
        "<|im_end|> | <|eot_id|> | <|endoftext|> | <end_of_turn> | <|end|> | <|end_header_id|> | \
            <|begin_of_text|> | <|im_sep|> | <|eom_id|>",
        0,
        24,
        r"<\|(?:im_end|eot_id|endoftext|end|end_header_id|begin_of_text|im_sep|eom_id)\|>|<end_of_turn>",
    ),
    // ---- Warn ---------------------------------------------------------------
    rule(
        "system_prompt_mention",
        Severity::Warn,
        "system·prompt | 系统提示词",
        0,
        16,
        r"system[\s_-]*prompt|系统提示词",
    ),
];

/// `pattern` with its `%NAME%` fragments filled in and `\b` made an ASCII word boundary.
pub(super) fn expand(pattern: &str) -> String {
    pattern
        .replace("%SECRET%", SECRET)
        .replace("%SECRET_PATH%", SECRET_PATH)
        .replace("%OVR_VERB%", OVR_VERB)
        .replace("%PRE%", PRE)
        .replace("%QUAL%", QUAL)
        .replace("%FILL%", FILL)
        .replace("%TARGET%", TARGET)
        .replace("%DET%", DET)
        .replace("%CJK_SECRET%", CJK_SECRET)
        .replace("%GAP%", GAP)
        .replace(r"\b", r"(?-u:\b)")
}

/// The words of a list separated by " | ".
pub(super) fn words(list: &'static str) -> impl Iterator<Item = &'static str> {
    list.split(" | ").map(str::trim).filter(|w| !w.is_empty())
}

/// "api·key" → "api key", "api_key", "api-key", "apikey".
pub(super) fn anchor_variants(anchor: &str) -> Vec<String> {
    let mut forms = vec![String::new()];
    for (i, part) in anchor.split('·').enumerate() {
        if i > 0 {
            forms = forms.into_iter().flat_map(|f| [" ", "_", "-", ""].map(|sep| format!("{f}{sep}"))).collect();
        }
        for f in &mut forms {
            f.push_str(part);
        }
    }
    forms
}
