// Material for MkDocs hides its search box when the site is opened from the file system: a browser
// does not run the search worker from file://. Say so where the search box would be.
(function () {
  if (location.protocol !== "file:" || document.querySelector(".md-search-file")) {
    return;
  }
  var header = document.querySelector(".md-header__inner");
  if (!header) {
    return;
  }
  var note = document.createElement("div");
  note.className = "md-search-file";
  note.textContent = "Search needs the site served: mkdocs serve, or python -m http.server -d site";
  header.insertBefore(note, header.querySelector(".md-search"));
})();
