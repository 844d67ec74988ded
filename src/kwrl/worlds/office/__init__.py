"""What the office apps (word, excel, powerpoint, pdfs; `kwrl.worlds.apps`) share, per format.

- `common`: paths, opening, caching and atomic saving of any office file, tables, colours, images.
- `blocks`: the content blocks (headings, paragraphs, lists, tables) the create tools take.
- `docs`: .docx through python-docx: rendering with identifiers, resolving them, editing.
- `sheets`: .xlsx through openpyxl: ranges, rendering, edit operations, charts.
- `slides`: .pptx through python-pptx: rendering, edit operations, charts, pictures.
- `recalc`: LibreOffice recalculation of a workbook an excel tool wrote (opt-in).

Their document libraries are imported inside functions, like the apps' (`LAZY_IMPORTS`).
"""
