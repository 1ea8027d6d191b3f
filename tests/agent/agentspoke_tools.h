/* The test apps' schemas, shared by agentspoke.c and (copied verbatim) the manifests
 * in tests/agent/manifests: the hub compares the two. */
#define MAIL_READ_IN "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}"
#define MAIL_READ_OUT                                                                              \
    "{\"type\":\"object\",\"properties\":{\"from\":{\"type\":\"string\"},\"subject\":{\"type\":"   \
    "\"string\"},\"body\":{\"type\":\"string\"}},\"required\":[\"from\",\"subject\",\"body\"]}"
#define MAIL_SEND_IN                                                                               \
    "{\"type\":\"object\",\"properties\":{\"to\":{\"type\":\"string\",\"maxLength\":200},"         \
    "\"body\":{\"type\":\"string\",\"maxLength\":10000}},\"required\":[\"to\",\"body\"],"          \
    "\"additionalProperties\":false}"
#define MAIL_SEND_OUT                                                                              \
    "{\"type\":\"object\",\"properties\":{\"sent\":{\"type\":\"boolean\"}},\"required\":["         \
    "\"sent\"]}"
#define FARE_IN                                                                                    \
    "{\"type\":\"object\",\"properties\":{\"from\":{\"type\":\"string\",\"minLength\":1,"          \
    "\"maxLength\":100},\"to\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":100}},"          \
    "\"required\":[\"from\",\"to\"],\"additionalProperties\":false}"
#define FARE_OUT                                                                                   \
    "{\"type\":\"object\",\"properties\":{\"fare\":{\"type\":\"string\"},\"note\":{\"type\":"      \
    "\"string\"}},\"required\":[\"fare\"]}"
#define SUMMARIZE_IN                                                                               \
    "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\",\"maxLength\":10000}},"    \
    "\"required\":[\"text\"],\"additionalProperties\":false}"
#define SUMMARIZE_OUT                                                                              \
    "{\"type\":\"object\",\"properties\":{\"summary\":{\"type\":\"string\"},\"model\":{\"type\":"  \
    "\"string\"}},\"required\":[\"summary\"]}"
#define SCAN_IN                                                                                    \
    "{\"type\":\"object\",\"properties\":{\"xmarker\":{\"type\":\"string\",\"minLength\":16,"      \
    "\"maxLength\":400,\"pattern\":\"^[0-9a-f]+$\"}},\"required\":[\"xmarker\"],"                  \
    "\"additionalProperties\":false}"
#define SCAN_OUT "{\"type\":\"object\"}"
#define ASK_IN "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}"
#define ASK_OUT "{\"type\":\"object\"}"
