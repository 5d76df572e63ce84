// ppdp ui: small enhancements; every page works without them.
"use strict";
(function () {
  const form = document.getElementById("schema-form");
  if (form) {
    const rows = Array.from(form.querySelectorAll("tbody tr"));
    const search = form.querySelector("[data-search]");
    const count = document.getElementById("shown-count");
    const shown = () => rows.filter((r) => !r.hidden);
    const filter = () => {
      const q = search.value.trim().toLowerCase();
      rows.forEach((r) => { r.hidden = q !== "" && !r.dataset.name.includes(q); });
      count.textContent = `${shown().length} of ${rows.length} shown`;
    };
    rows.forEach((r) => {  // a row shows the fields of the type chosen
      const type = r.querySelector("[data-type]");
      type.addEventListener("change", () => {
        r.classList.toggle("kind-numeric", type.value === "numeric");
        r.classList.toggle("kind-categorical", type.value === "categorical");
      });
    });
    search.addEventListener("input", filter);
    search.addEventListener("keydown", (e) => { if (e.key === "Enter") e.preventDefault(); });
    filter();
    form.querySelectorAll("[data-select]").forEach((b) => b.addEventListener("click", () => {
      const all = b.dataset.select === "shown";
      rows.forEach((r) => { r.querySelector("[data-row]").checked = all && !r.hidden; });
    }));
    form.querySelector("[data-bulk]").addEventListener("click", () => {
      const lower = document.getElementById("bulk-lower").value.trim();
      const upper = document.getElementById("bulk-upper").value.trim();
      const scale = document.getElementById("bulk-scale").value;
      const pub = document.getElementById("bulk-public").checked;
      let n = 0;
      rows.forEach((r) => {
        if (!r.querySelector("[data-row]").checked) return;
        n += 1;
        if (lower) r.querySelector("[data-lower]").value = lower;
        if (upper) r.querySelector("[data-upper]").value = upper;
        if (scale) r.querySelector("[data-scale]").value = scale;
        if (pub) r.querySelector("[data-public]").checked = true;
      });
      count.textContent = `applied to ${n} column(s); save to keep`;
    });
  }
  // The release form shows the fields of the kind chosen.
  const kinds = document.querySelectorAll("input[name=kind]");
  if (kinds.length) {
    const show = () => {
      const chosen = document.querySelector("input[name=kind]:checked");
      document.querySelectorAll("[data-kind]").forEach((el) => {
        el.hidden = chosen !== null && !el.dataset.kind.split(" ").includes(chosen.value);
      });
    };
    kinds.forEach((k) => k.addEventListener("change", show));
    show();
  }
})();
