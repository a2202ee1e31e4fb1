/* api_static.c — serves the playground (clients/web/) at GET /: files from one directory, no
 * directory listing, no path that leaves it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

static const struct {
    const char *ext, *type;
} mime[] = {{".html", "text/html; charset=utf-8"},
            {".js", "text/javascript; charset=utf-8"},
            {".css", "text/css; charset=utf-8"},
            {".svg", "image/svg+xml"},
            {".json", "application/json"},
            {".png", "image/png"},
            {".ico", "image/x-icon"}};

void wp_api_static(void *appv, const wp_req *req, wp_resp *resp) {
    wp_app *app = appv;
    wp_err err = {0};
    const char *rel = req->path + 1;
    if (!*rel) rel = "index.html";
    if (strstr(rel, "..") || strchr(rel, '\\') || rel[0] == '/' ||
        strspn(rel, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/") != strlen(rel)) {
        WP_FAIL(&err, 404, "not_found", "path", "no such file");
        wp_resp_error(resp, &err);
        return;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", app->web_dir, rel);
    size_t n = 0;
    char *data = wp_read_file(path, &n);
    if (!data) {
        WP_FAIL(&err, 404, "not_found", "path", "no such file: /%.200s", rel);
        wp_resp_error(resp, &err);
        return;
    }
    const char *type = "application/octet-stream";
    const char *dot = strrchr(rel, '.');
    for (size_t i = 0; dot && i < WP_ARRAY_LEN(mime); i++)
        if (!strcmp(dot, mime[i].ext)) type = mime[i].type;
    resp->status = 200;
    resp->body = data;
    resp->body_len = n;
    resp->content_type = type;
}
