/* fuzz_label_selector.c - libFuzzer target: the label selector text parser,
 * and matching whatever it accepts against fixed labels. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/labels.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static cJSON *labels;
    char *text = malloc(size + 1), err[256];
    ms_label_selector_t *s = NULL;

    if (text == NULL)
        return 0;
    if (labels == NULL)
        labels = cJSON_Parse("{\"app\":\"web\",\"env\":\"prod\",\"gen\":\"12\",\"canary\":\"\"}");
    memcpy(text, data, size);
    text[size] = '\0';
    if (ms_label_selector_parse(text, &s, err, sizeof err) == MS_OK) {
        (void)ms_label_selector_matches(s, labels);
        ms_label_selector_free(s);
    }
    free(text);
    return 0;
}
