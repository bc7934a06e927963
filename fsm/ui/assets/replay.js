// Bring the divergence into view: its line of the record, and the diverging value inside
// the recorded line's own scroll box (it may sit far down or to the right of it).
const hit = document.getElementById('hit');
if (hit) {
  const row = document.querySelector('tr.diverged');
  if (row) row.scrollIntoView({block: 'nearest'});
  hit.scrollIntoView({block: 'center', inline: 'center'});
}
