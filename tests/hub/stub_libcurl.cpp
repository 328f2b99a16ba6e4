// A library named libcurl.so.4 with none of curl's symbols or symbol
// versions (stub_libcurl.map). Found first through LD_LIBRARY_PATH, it hides the system's
// libcurl from the dynamic loader and from dlopen: a binary that lists
// libcurl.so.4 as NEEDED then fails to start, and `fetch` meets a libcurl
// that lacks curl_easy_init.
extern "C" __attribute__((visibility("default"))) int hpcbench_stub_libcurl() { return 0; }
